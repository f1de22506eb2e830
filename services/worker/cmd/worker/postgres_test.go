package main

import (
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
)

// TestPostgresRestartRecovers: Postgres restarts while payments are being
// charged. Handlers that lose the database release the charge stage and
// retry later; every payment ends terminal, charged exactly once (the psp
// replays any charge made before a failed settle), and nothing is
// dead-lettered. It restarts a shared service, so it must not run in
// parallel.
func TestPostgresRestartRecovers(t *testing.T) {
	e := newEnv(t, map[string]string{"PSP_LATENCY": "50ms"})
	ws := []*worker{e.startWorker("pgrestart-0", nil), e.startWorker("pgrestart-1", nil)}

	const n = 30
	var ps []payment
	var ids []string
	for i := range n { // rows first: the test's own connections die with the server
		p := e.newPayment(700+int64(i), "cus_pgrestart")
		ps, ids = append(ps, p), append(ids, p.ID)
	}
	for _, p := range ps[:n/2] {
		e.publish(e.message(p), 1)
	}
	testenv.Harness(t, "restart", "postgres")
	e.db.Reset()
	for _, p := range ps[n/2:] {
		e.publish(e.message(p), 1)
	}
	e.waitTerminal(60*time.Second, ids...)

	for _, w := range ws {
		select {
		case err := <-w.done:
			t.Fatalf("%s stopped during the restart: %v", w.name, err)
		default:
		}
		waitReady(t, w.addr, 10*time.Second)
	}
	s, err := e.pspAdmin.Summary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if s.Charges != n || len(s.ReferencesChargedMoreThanOnce) != 0 {
		t.Errorf("psp: %d charges (want %d), charged more than once: %v", s.Charges, n, s.ReferencesChargedMoreThanOnce)
	}
	for _, p := range ps {
		if r := e.row(p.ID); r.Status != "succeeded" {
			t.Errorf("%s: %+v, want succeeded", p.ID, r)
		}
	}
	if d := e.queueDepth(e.topo.DeadLetterQueue()); d != 0 {
		t.Errorf("%d messages dead-lettered", d)
	}
	t.Logf("transient retries: %v, duplicates: %v", sum(t, outcome("transient_retry"), ws...), sum(t, outcome("duplicate"), ws...))
}
