package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/oncepay/oncepay/services/psp/pspclient"
)

// A worker process SIGKILLed inside a slow psp call: the message is
// redelivered, a second process takes the charge stage over once the lease
// has expired (and records the takeover), the psp sees the same key both
// times and charges once.
func TestWorkerKilledMidChargeIsTakenOver(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"PSP_LATENCY": "3s"})
	bin := filepath.Join(t.TempDir(), "worker")
	if err := goBuild(t, bin, "github.com/oncepay/oncepay/services/worker/cmd/worker"); err != nil {
		t.Fatal(err)
	}
	short := map[string]string{"IDEM_LEASE": "2s", "IDEM_TIMEOUT": "300ms"}
	a := startProcess(t, "worker-a", bin, e.workerEnv("worker-a", short))
	waitReady(t, a.addr, 10*time.Second)

	p := e.newPayment(2500, "cus_kill")
	e.publish(e.message(p), 1)
	e.waitClaimed(p.Key)
	time.Sleep(500 * time.Millisecond) // inside the 3s psp call now
	a.kill(t)

	b := startProcess(t, "worker-b", bin, e.workerEnv("worker-b", short))
	e.waitTerminal(30*time.Second, p.ID)

	var worker string
	var attempt int
	if err := e.db.QueryRow(context.Background(),
		`SELECT worker, attempt FROM charge_takeovers WHERE payment_id = $1`, p.ID).Scan(&worker, &attempt); err != nil {
		t.Fatalf("no charge_takeovers row: %v", err)
	}
	if worker != "worker-b" || attempt < 2 {
		t.Errorf("takeover by %s as attempt %d, want worker-b, attempt >= 2", worker, attempt)
	}

	l := e.ledger(p.ID)
	if len(l.Charges) != 1 {
		t.Fatalf("psp charged %d times, want 1: %+v", len(l.Charges), l)
	}
	if len(l.Calls) < 2 || l.Calls[0].Outcome != pspclient.OutcomeCancelled {
		t.Errorf("psp calls %+v: want the killed worker's call (cancelled) and the takeover's", l.Calls)
	}
	for _, c := range l.Calls {
		if c.IdempotencyKey != e.merchant+":"+p.Key {
			t.Errorf("psp call with key %q, want %q", c.IdempotencyKey, e.merchant+":"+p.Key)
		}
	}
	if r := e.row(p.ID); r.Status != "succeeded" || r.Charge != l.Charges[0].ID {
		t.Errorf("payment = %+v, want succeeded with %s", r, l.Charges[0].ID)
	}
	if n := b.logs.count(`"took over an expired lease"`, p.ID); n != 1 {
		t.Errorf("worker-b logged %d takeovers of %s, want 1", n, p.ID)
	}
}
