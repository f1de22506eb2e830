package verify

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// K6 is how the load generator ended: its exit status and its thresholds,
// each named "<metric>: <expression>" as k6 states it, with whether it held.
// The thresholds state the client's side of the contract (loadtest/k6:
// every answer documented, refusals with Retry-After, replays identical,
// payments completed); exit status 99 is k6's "a threshold was crossed".
type K6 struct {
	Exit       int             `json:"exit"`
	Thresholds map[string]bool `json:"thresholds,omitempty"`
}

// Failed returns the crossed thresholds, sorted.
func (k K6) Failed() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(k.Thresholds)) {
		if !k.Thresholds[name] {
			out = append(out, name)
		}
	}
	return out
}

// ReadK6Summary reads the thresholds from the summary k6's handleSummary
// wrote (loadtest/k6/payments.js, summary.json in the run directory).
func ReadK6Summary(path string) (map[string]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("k6 summary: %w", err)
	}
	var v struct {
		Thresholds map[string]bool `json:"thresholds"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("k6 summary %s: %w", path, err)
	}
	return v.Thresholds, nil
}

// AddK6 records how k6 ended in r. A non-zero exit fails the run: 99 (a
// threshold crossed) with one violation naming the crossed thresholds,
// anything else (k6 itself failed) with one saying so. A crossed threshold
// fails the run even if k6's exit status was lost.
func (r *Report) AddK6(k K6) {
	r.K6 = &k
	failed := k.Failed()
	switch {
	case len(failed) > 0:
		r.Violations = append(r.Violations, Violation{Kind: KindK6Threshold, IDs: failed,
			Detail: fmt.Sprintf("k6 exited with status %d: its thresholds state the client's contract, and %d failed: %s (k6.log, summary.json)",
				k.Exit, len(failed), strings.Join(failed, "; "))})
	case k.Exit == 99:
		r.Violations = append(r.Violations, Violation{Kind: KindK6Threshold,
			Detail: "k6 exited with status 99 (a threshold failed), but its summary names none; see k6.log"})
	case k.Exit != 0:
		r.Violations = append(r.Violations, Violation{Kind: KindK6Failed,
			Detail: fmt.Sprintf("k6 exited with status %d: the load did not run as planned; see k6.log", k.Exit)})
	}
	r.Pass = len(r.Violations) == 0
}

// The kinds of violation of the client's contract, as k6 measured it
// (Invariant 0: they belong to no numbered invariant).
const (
	KindK6Threshold = "k6_threshold" // a k6 threshold was crossed
	KindK6Failed    = "k6_failed"    // k6 exited with an error of its own
)
