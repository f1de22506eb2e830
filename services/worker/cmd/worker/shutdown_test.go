package main

import (
	"testing"
	"time"

	"github.com/oncepay/oncepay/services/psp/pspclient"
)

// On shutdown the consumer is cancelled and the in-flight charge finishes
// within SHUTDOWN_GRACE; run returns nil.
func TestShutdownFinishesInFlightWork(t *testing.T) {
	t.Parallel()
	e, w, p, d := stopMidCharge(t, "graceful", "1s", "5s", 1200)
	if d > 5*time.Second {
		t.Errorf("shutdown took %s, more than the grace", d)
	}
	if r := e.row(p.ID); r.Status != "succeeded" {
		t.Errorf("payment = %+v: the in-flight charge did not finish", r)
	}
	if w.logs.count(`"consumer draining"`, `"why":"shutdown"`) != 1 {
		t.Error("no draining log line")
	}
}

// Work still running when the grace ends is cut off and left unacked; the
// broker redelivers it and the next worker charges it, once.
func TestShutdownLeavesUnfinishedWorkForRedelivery(t *testing.T) {
	t.Parallel()
	e, _, p, d := stopMidCharge(t, "impatient", "3s", "200ms", 1300)
	if d > 2*time.Second {
		t.Errorf("shutdown took %s with a 200ms grace", d)
	}
	if r := e.row(p.ID); r.Status != "pending" {
		t.Fatalf("payment = %+v, want still pending", r)
	}
	if n := e.queueDepth(e.topo.Queue); n != 1 {
		t.Errorf("%d messages back in the queue, want 1 (redelivered)", n)
	}

	e.setPSP(pspclient.ConfigPatch{LatencyMS: new(int64(0))})
	e.startWorker("successor", nil)
	e.waitTerminal(10*time.Second, p.ID)
	if l := e.ledger(p.ID); len(l.Charges) != 1 {
		t.Errorf("psp charged %d times, want 1: %+v", len(l.Charges), l)
	}
}

// stopMidCharge starts a worker named name with SHUTDOWN_GRACE grace
// against a psp that answers after latency, publishes one payment of
// amount, stops the worker while the charge is inside the psp call (run
// must return nil) and returns how long the stop took.
func stopMidCharge(t *testing.T, name, latency, grace string, amount int64) (*env, *worker, payment, time.Duration) {
	t.Helper()
	e := newEnv(t, map[string]string{"PSP_LATENCY": latency})
	w := e.startWorker(name, map[string]string{"SHUTDOWN_GRACE": grace})
	p := e.newPayment(amount, "cus_"+name)
	e.publish(e.message(p), 1)
	e.waitClaimed(p.Key)
	time.Sleep(200 * time.Millisecond) // inside the psp call

	start := time.Now()
	if err := w.stop(); err != nil {
		t.Fatalf("run returned %v", err)
	}
	return e, w, p, time.Since(start)
}
