// Package k6_test checks the k6 scripts' request generator with the pinned
// k6 in bin/ (make k6).
package k6_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// k6Path is the pinned k6 in bin/.
func k6Path(t *testing.T) string {
	t.Helper()
	k6, err := filepath.Abs("../../bin/k6")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(k6); err != nil {
		t.Fatalf("no k6 at %s (build the pinned one: make k6): %v", k6, err)
	}
	return k6
}

// plan runs plan.js with seed and returns the request records it printed.
func plan(t *testing.T, seed string) string {
	t.Helper()
	cmd := exec.Command(k6Path(t), "run", "--quiet", "--summary-mode=disabled", "--log-format=raw", "-e", "SEED="+seed, "-e", "PLAN_N=40", "plan.js")
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

// TestClient runs testdata/client.js against a fake api: the client retries
// a 429 after its Retry-After, and pay's onAmbiguous sends another payload
// with the key right after an attempt cut off in flight, before its retry.
func TestClient(t *testing.T) {
	t.Parallel()
	k6 := k6Path(t)
	var mu sync.Mutex
	var seen []string // key and amount of every request, in order
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Amount int64 `json:"amount"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %d", key, body.Amount))
		calls[key]++
		n := calls[key]
		mu.Unlock()
		switch {
		case key == "rate-limited" && n == 1:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		case key == "ambiguous" && n == 1: // cut off in flight
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		case key == "ambiguous" && body.Amount == 100: // the other payload took the key
			w.WriteHeader(http.StatusUnprocessableEntity)
		default:
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, `{"id":"pay_%s_%d"}`, key, body.Amount)
		}
	}))
	t.Cleanup(srv.Close)
	cmd := exec.Command(k6, "run", "--quiet", "--summary-mode=disabled", "--log-format=raw", "testdata/client.js")
	cmd.Env = append(os.Environ(), "K6_NO_USAGE_REPORT=true", "BASE_URLS="+srv.URL)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("k6 run testdata/client.js: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		var res struct {
			Kind, Name, Outcome string
			Attempts            int
			Other               *string
		}
		if json.Unmarshal([]byte(l), &res) != nil || res.Kind != "result" {
			continue
		}
		got[res.Name] = fmt.Sprintf("%s after %d attempt(s)", res.Outcome, res.Attempts)
		if res.Other != nil {
			got[res.Name] += ", other payload " + *res.Other
		}
	}
	want := map[string]string{
		"rate-limited": "ok after 2 attempt(s)",
		"ambiguous":    "rejected after 2 attempt(s), other payload ok",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s\nk6 output:\n%s", diff, out)
	}
	mu.Lock()
	defer mu.Unlock()
	wantSeen := []string{"rate-limited 100", "rate-limited 100", "ambiguous 100", "ambiguous 101", "ambiguous 100"}
	if diff := cmp.Diff(wantSeen, seen); diff != "" {
		t.Errorf("requests in order (-want +got):\n%s", diff)
	}
}

// TestSchedule runs testdata/schedule.js: in the fault matrix a step starts
// no earlier than the step before it returned plus the quiet time the plan
// left after it (at most lib/schedule.js's minSettleMs), so that a slow
// fault is not still running when the next begins; the first step and the
// demo's schedule keep their offsets.
func TestSchedule(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(k6Path(t), "run", "--quiet", "--summary-mode=disabled", "--log-format=raw", "testdata/schedule.js")
	cmd.Env = append(os.Environ(), "K6_NO_USAGE_REPORT=true")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("k6 run testdata/schedule.js: %v\n%s", err, out)
	}
	got := map[string]int64{}
	for _, l := range strings.Split(string(out), "\n") {
		var c struct {
			Kind, Name string
			Got        int64
		}
		if json.Unmarshal([]byte(l), &c) == nil && c.Kind == "case" {
			got[c.Name] = c.Got
		}
	}
	const t0 = 1000000
	want := map[string]int64{
		"first keeps its offset":                    t0 + 10000,
		"on time: planned":                          t0 + 50000,
		"late: returned plus the least quiet time":  t0 + 76000 + 10000,
		"late: returned plus a shorter planned gap": t0 + 60000 + 3000,
		"not sequential: planned":                   t0 + 50000,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("start times (-want +got):\n%s\nk6 output:\n%s", diff, out)
	}
}
