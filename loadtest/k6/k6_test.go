// Package k6_test checks the k6 scripts' request generator with the pinned
// k6 in bin/ (make k6).
package k6_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// plan runs plan.js with seed and returns the request records it printed.
func plan(t *testing.T, seed string) string {
	t.Helper()
	k6, err := filepath.Abs("../../bin/k6")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(k6); err != nil {
		t.Fatalf("no k6 at %s (build the pinned one: make k6): %v", k6, err)
	}
	cmd := exec.Command(k6, "run", "--quiet", "--summary-mode=disabled", "--log-format=raw", "-e", "SEED="+seed, "-e", "PLAN_N=40", "plan.js")
	cmd.Env = append(os.Environ(), "K6_NO_USAGE_REPORT=true")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("k6 run plan.js: %v\n%s%s", err, out.String(), errb.String())
	}
	// Only the plan's records count: k6 may add lines of its own to the
	// same streams (errors and warnings such as "Error from API server").
	var records []string
	for _, l := range strings.Split(out.String()+errb.String(), "\n") {
		if strings.Contains(l, `"steady"`) {
			records = append(records, l)
		}
	}
	if len(records) != 40 {
		t.Fatalf("plan.js printed %d requests, want 40:\n%s%s", len(records), out.String(), errb.String())
	}
	return strings.Join(records, "\n")
}

// TestPlanDeterministic: two runs with one seed send the same requests (the
// fault plan's determinism is loadtest/fault's TestPlanDeterministic).
func TestPlanDeterministic(t *testing.T) {
	t.Parallel()
	a, b, other := plan(t, "7"), plan(t, "7"), plan(t, "8")
	if a != b {
		t.Errorf("two runs with seed 7 differ:\n%s\n---\n%s", a, b)
	}
	if a == other {
		t.Errorf("seeds 7 and 8 gave the same requests")
	}
}
