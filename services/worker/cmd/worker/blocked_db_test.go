package main

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// A charge whose payment update waits on a row lock held by someone else is
// cut off by lock_timeout, statement_timeout or WORKER_MAX_HOLD (each case
// turns only one of them on), although the heartbeat keeps the lease: the
// stage is released and the delivery retried, never dead-lettered. Once
// the lock goes, the payment settles, charged once.
func TestBlockedSettleIsRetriedUntilTheLockGoes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		log  string // in the worker's log when the cut-off happened
	}{
		{"lock timeout", map[string]string{"PG_LOCK_TIMEOUT": "300ms", "PG_STATEMENT_TIMEOUT": "0"}, "SQLSTATE 55P03"},
		{"statement timeout", map[string]string{"PG_LOCK_TIMEOUT": "0", "PG_STATEMENT_TIMEOUT": "300ms"}, "SQLSTATE 57014"},
		{"max hold", map[string]string{"PG_LOCK_TIMEOUT": "0", "PG_STATEMENT_TIMEOUT": "0", "WORKER_MAX_HOLD": "1s"}, "maximum hold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			ctx := context.Background()
			p := e.newPayment(1200, "cus_locked")
			tx, err := e.db.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, "SELECT 1 FROM payments WHERE id = $1 FOR UPDATE", p.ID); err != nil {
				t.Fatal(err)
			}

			w := e.startWorker("locked", tc.env)
			start := time.Now()
			e.publish(e.message(p), 1)
			eventually(t, 15*time.Second, func() string {
				if n := w.metric(t, outcome("transient_retry")); n < 2 {
					return fmt.Sprintf("%v retries while the row is locked, want at least 2", n)
				}
				return ""
			})
			t.Logf("retried while locked after %s", time.Since(start))
			if w.logs.count(tc.log) == 0 {
				t.Errorf("no log line says %q", tc.log)
			}
			if r := e.row(p.ID); r.Status != "pending" {
				t.Fatalf("payment %+v settled through a row lock", r)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}

			e.waitTerminal(15*time.Second, p.ID)
			waitSettled(t, 15*time.Second, 1, w)
			if n := w.metric(t, outcome("dead_lettered")); n != 0 {
				t.Errorf("%v deliveries dead-lettered, want 0", n)
			}
			t.Logf("settled after %s", time.Since(start))
			l := e.ledger(p.ID)
			if r := e.row(p.ID); len(l.Charges) != 1 || r.Status != "succeeded" || r.Charge != l.Charges[0].ID {
				t.Errorf("row %+v, psp charges %+v; want one charge, recorded", r, l.Charges)
			}
		})
	}
}
