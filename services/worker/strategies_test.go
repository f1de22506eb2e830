package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oncepay/oncepay/pkg/idem/naive"
	"github.com/oncepay/oncepay/services/psp/pspclient"
)

// TestStrategiesWhenThePSPAnswerIsLost runs the same fault through the
// worker under each strategy: the psp charges, then drops the connection
// (fail_after_rate 1 until the first such call, then 0), and the worker
// retries. Strategies that propagate the key get the charge back from the
// psp's own idempotency: one charge. The comparison strategies send a fresh
// key per attempt, so the retry charges again, whatever their Redis
// boundary does: two charges or more for one payment, even though the psp's
// idempotency is on. (no-backstop is oncepay in the worker.)
func TestStrategiesWhenThePSPAnswerIsLost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		strategy  naive.Strategy
		propagate bool // one charge, the propagated key
	}{
		{naive.StrategyOncepay, true},
		{naive.StrategyOff, true},
		{naive.StrategyGetThenSet, false},
		{naive.StrategySetNXMarker, false},
		{naive.StrategyLockThenCheck, false},
		{naive.StrategyAPIOnly, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.strategy), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, map[string]string{"PSP_FAIL_AFTER_RATE": "1"})
			w := e.startWorker("lost-answer-"+string(tt.strategy), map[string]string{"IDEM_STRATEGY": string(tt.strategy)})
			p := e.newPayment(3100, "cus_lost_answer")
			e.publish(e.message(p), 1)
			eventually(t, 10*time.Second, func() string {
				for _, c := range e.ledger(p.ID).Calls {
					if c.Outcome == pspclient.OutcomeFailAfter {
						return ""
					}
				}
				return "no fail_after call yet"
			})
			e.setPSP(pspclient.ConfigPatch{FailAfterRate: new(0.0)})
			e.waitTerminal(15*time.Second, p.ID)

			l := e.ledger(p.ID)
			propagated := e.merchant + ":" + p.Key
			if tt.propagate {
				if len(l.Charges) != 1 {
					t.Fatalf("psp charged %d times, want 1: %+v", len(l.Charges), l)
				}
				for _, c := range l.Calls {
					if c.IdempotencyKey != propagated {
						t.Errorf("psp call with key %q, want the propagated %q", c.IdempotencyKey, propagated)
					}
				}
			} else {
				if len(l.Charges) < 2 {
					t.Fatalf("psp charged %d times; %s sends a fresh key per attempt, so the retry charges again: %+v", len(l.Charges), tt.strategy, l)
				}
				seen := map[string]bool{}
				for _, c := range l.Charges {
					if !strings.HasPrefix(c.IdempotencyKey, propagated+":attempt-") || seen[c.IdempotencyKey] {
						t.Errorf("charge with key %q, want a fresh %s:attempt-<random> per attempt", c.IdempotencyKey, propagated)
					}
					seen[c.IdempotencyKey] = true
				}
			}
			if r := e.row(p.ID); r.Status != "succeeded" || r.Charge != l.Charges[len(l.Charges)-1].ID {
				t.Errorf("payment = %+v, want succeeded with the last charge %s", r, l.Charges[len(l.Charges)-1].ID)
			}
			checkStrategyShown(t, w, tt.strategy)
		})
	}
}

// checkStrategyShown: a demonstration strategy is in /readyz and in a WARN
// line; the real one in neither.
func checkStrategyShown(t *testing.T, w *worker, s naive.Strategy) {
	t.Helper()
	resp, err := http.Get("http://" + w.addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep struct {
		Details map[string]string `json:"details"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	warned := w.logs.count(`"level":"WARN"`, `DEMONSTRATION`) > 0
	switch {
	case s.Real() && (rep.Details != nil || warned):
		t.Errorf("the real boundary: readyz details %v, warned %v; want neither", rep.Details, warned)
	case !s.Real() && (rep.Details["idempotency_strategy"] != string(s) || !warned):
		t.Errorf("%s: readyz details %v, warned %v; want both", s, rep.Details, warned)
	}
}
