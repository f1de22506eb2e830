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
	e := newEnv(t, map[string]string{"PSP_LATENCY": "1s"})
	w := e.startWorker("graceful", map[string]string{"SHUTDOWN_GRACE": "5s"})
	p := e.newPayment(1200, "cus_graceful")
	e.publish(e.message(p), 1)
	e.waitClaimed(p.Key)
	time.Sleep(200 * time.Millisecond) // inside the psp call

	start := time.Now()
	if err := w.stop(); err != nil {
		t.Fatalf("run returned %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
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
	e := newEnv(t, map[string]string{"PSP_LATENCY": "3s"})
	w := e.startWorker("impatient", map[string]string{"SHUTDOWN_GRACE": "200ms"})
	p := e.newPayment(1300, "cus_impatient")
	e.publish(e.message(p), 1)
	e.waitClaimed(p.Key)
	time.Sleep(200 * time.Millisecond) // inside the psp call

	start := time.Now()
	if err := w.stop(); err != nil {
		t.Fatalf("run returned %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
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
