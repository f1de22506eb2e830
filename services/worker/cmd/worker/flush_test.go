package main

import (
	"context"
	"testing"
	"time"
)

// Redis loses every key (FLUSHDB of this package's database) mid-run while
// copies keep arriving: no payment is charged twice. The database
// (terminal status, compare-and-set) and the propagated psp key hold without
// the boundary. It empties a shared database, so it must not run in parallel.
func TestRedisFlushNoDoubleCharge(t *testing.T) {
	e := newEnv(t, map[string]string{"PSP_LATENCY": "200ms", "PSP_LATENCY_JITTER": "150ms"})
	ws := []*worker{e.startWorker("flush-0", nil), e.startWorker("flush-1", nil), e.startWorker("flush-2", nil)}

	const n = 20
	var ps []payment
	var ids []string
	for i := range n {
		p := e.newPayment(1000+int64(i), "cus_flush")
		ps = append(ps, p)
		ids = append(ids, p.ID)
		e.publish(e.message(p), 2)
	}
	// Flush while some payments are done and others are in flight.
	eventually(t, 20*time.Second, func() string {
		var done int
		_ = e.db.QueryRow(context.Background(), `SELECT count(*) FROM payments WHERE id = ANY($1) AND status <> 'pending'`, ids).Scan(&done)
		if done < n/4 {
			return "too few payments done before the flush"
		}
		return ""
	})
	if err := e.redis.FlushDB(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	t.Log("FLUSHDB done")
	for _, p := range ps { // copies meeting an empty boundary
		e.publish(e.message(p), 2)
	}
	e.waitTerminal(45*time.Second, ids...)
	waitSettled(t, 30*time.Second, 4*n, ws...) // every copy, before reading the ledger

	s, err := e.pspAdmin.Summary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if s.Charges != n || len(s.ReferencesChargedMoreThanOnce) != 0 {
		t.Errorf("psp: %d charges (want %d), charged more than once: %v", s.Charges, n, s.ReferencesChargedMoreThanOnce)
	}
	for _, p := range ps {
		l := e.ledger(p.ID)
		if r := e.row(p.ID); len(l.Charges) != 1 || r.Status != "succeeded" || r.Charge != l.Charges[0].ID {
			t.Errorf("%s: row %+v, psp charges %+v", p.ID, r, l.Charges)
		}
	}
	t.Logf("outcomes: charged %v, duplicate %v, lost_lease %v, in_progress_retry %v; psp calls by outcome %v",
		sum(t, outcome("charged"), ws...), sum(t, outcome("duplicate"), ws...),
		sum(t, outcome("lost_lease"), ws...), sum(t, outcome("in_progress_retry"), ws...), s.CallsByOutcome)
}
