//go:build compare

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
// psp's own idempotency: one charge, whatever their Redis boundary does
// (the +key strategies). The others send a fresh key per attempt, so the
// retry charges again: two charges or more for one payment, even though
// the psp's idempotency is on. (no-backstop is oncepay in the worker.)
func TestStrategiesWhenThePSPAnswerIsLost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		strategy  naive.Strategy
		propagate bool // one charge, the propagated key
	}{
		{naive.StrategyOncepay, true},
		{naive.StrategyOff, true},
		{naive.StrategyGetThenSet, false},
		{naive.StrategyGetThenSetKey, true},
		{naive.StrategySetNXMarker, false},
		{naive.StrategySetNXMarkerKey, true},
		{naive.StrategyLockThenCheck, false},
		{naive.StrategyLockThenCheckKey, true},
		{naive.StrategyAPIOnly, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.strategy), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, map[string]string{"PSP_FAIL_AFTER_RATE": "1"})
			w := e.startWorker("lost-answer-"+string(tt.strategy), map[string]string{"IDEM_STRATEGY": string(tt.strategy)})
			p := e.newPayment(3100, "cus_lost_answer")
			e.publish(e.message(p), 1)
			e.afterLostAnswer(p.ID)

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

// TestNoBackstopDuplicateIsRefusedByThePSP: without the unique-key
// backstop, Redis data loss lets the api create a second payment for a key
// (stored under an alias, see naive.NoBackstopAlias). The worker claims and
// charges it under the client's key, so the psp, which already charged that
// key for the first payment, refuses the second request for good: no second
// charge, but a payment the client was told about ends failed with the
// psp's reason. It flushes this package's Redis database, so it does not run
// in parallel.
func TestNoBackstopDuplicateIsRefusedByThePSP(t *testing.T) {
	e := newEnv(t, nil)
	e.startWorker("nobackstop", map[string]string{"IDEM_STRATEGY": string(naive.StrategyNoBackstop)})
	first := e.newPayment(1800, "cus_nobackstop")
	e.publish(e.message(first), 1)
	e.waitTerminal(15*time.Second, first.ID)
	if err := e.redis.FlushDB(t.Context()).Err(); err != nil { // Redis forgets the key
		t.Fatal(err)
	}

	second := payment{ID: "pay_" + randHex(8), Customer: first.Customer, Amount: first.Amount}
	second.Key = naive.NoBackstopAlias(first.Key, second.ID)
	_, err := e.db.Exec(t.Context(), `
		INSERT INTO payments (id, merchant_id, idempotency_key, request_fingerprint, amount, currency,
		                      customer_id, response_status, response_body, created_at, updated_at)
		VALUES ($1, $2, $3, 'fp', $4, 'EUR', $5, 202, '{}', now(), now())`,
		second.ID, e.merchant, second.Key, second.Amount, second.Customer)
	if err != nil {
		t.Fatal(err)
	}
	e.publish(e.message(second), 1)
	e.waitTerminal(15*time.Second, second.ID)
	l := e.ledger(second.ID)
	if len(l.Charges) != 0 || len(l.Calls) != 1 || l.Calls[0].Outcome != pspclient.OutcomeMismatch ||
		l.Calls[0].IdempotencyKey != e.merchant+":"+first.Key {
		t.Errorf("psp ledger of the second payment %+v: want one call under the client's key, refused as a mismatch", l)
	}
	if r := e.row(second.ID); r.Status != "failed" || !strings.Contains(r.Reason, "idempotency-key-mismatch") {
		t.Errorf("second payment %+v, want it failed with the psp's reason", r)
	}
	if d := e.queueDepth(e.topo.DeadLetterQueue()); d != 0 {
		t.Errorf("%d messages dead-lettered, want none: a refused charge settles the payment", d)
	}
	if n := len(e.ledger(first.ID).Charges); n != 1 {
		t.Errorf("first payment charged %d times, want 1", n)
	}
}
