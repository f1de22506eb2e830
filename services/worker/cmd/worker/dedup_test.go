package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/oncepay/oncepay/services/worker/internal/metrics"
)

// The same message delivered 20 times to 4 concurrent consumers: the psp is
// called once, the payment succeeds with that one charge.
func TestDuplicateMessagesChargeOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"PSP_LATENCY": "300ms"}) // long enough for the copies to meet a live lease
	var ws []*worker
	for i := range 4 {
		ws = append(ws, e.startWorker(fmt.Sprintf("dedup-%d", i), nil))
	}
	p := e.newPayment(1500, "cus_dedup")
	e.publish(e.message(p), 20)

	e.waitTerminal(20*time.Second, p.ID)
	// Every copy is settled: one charge, the rest duplicates (after in-progress retries).
	waitSettled(t, 20*time.Second, 20, ws...)

	l := e.ledger(p.ID)
	if len(l.Calls) != 1 || len(l.Charges) != 1 {
		t.Fatalf("psp saw %d calls and %d charges, want 1 and 1: %+v", len(l.Calls), len(l.Charges), l)
	}
	if got, want := l.Calls[0].IdempotencyKey, e.merchant+":"+p.Key; got != want {
		t.Errorf("psp key %q, want the propagated %q", got, want)
	}
	r := e.row(p.ID)
	if r.Status != "succeeded" || r.Charge != l.Charges[0].ID {
		t.Errorf("payment = %+v, want succeeded with charge %s", r, l.Charges[0].ID)
	}
	if got := sum(t, outcome(metrics.Charged), ws...); got != 1 {
		t.Errorf("charged counted %v times, want 1", got)
	}
	t.Logf("in-progress retries: %v, duplicates: %v",
		sum(t, outcome(metrics.InProgressRetry), ws...), sum(t, outcome(metrics.Duplicate), ws...))
	if e.queueDepth(e.topo.DeadLetterQueue()) != 0 {
		t.Error("something was dead-lettered")
	}
}
