package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/oncepay/oncepay/services/psp/pspclient"

	"github.com/oncepay/oncepay/services/worker/internal/reconcile"
)

// reconcileEnv makes a worker reconcile payments pending for longer than
// after, every 100ms.
func reconcileEnv(after time.Duration) map[string]string {
	return map[string]string{"WORKER_RECONCILE_AFTER": after.String(), "WORKER_RECONCILE_INTERVAL": "100ms"}
}

func reconciled(result string) string { return `worker_reconcile_total{result="` + result + `"}` }

const oldestPending = "payments_oldest_pending_age_seconds"

// chargeDirectly charges p at the psp under the key the worker uses, as a
// worker whose message then vanished would have.
func (e *env) chargeDirectly(p payment) (pspclient.Charge, error) {
	return e.psp.Charge(context.Background(), e.merchant+":"+p.Key, pspclient.ChargeRequest{
		Amount: p.Amount, Currency: "EUR", CustomerID: p.Customer, Reference: p.ID,
	})
}

// Payments left pending with no message to drive them are settled by the
// reconciler: one charged at the psp whose answer was lost (succeeded with
// the psp's charge id, found by key, not charged again), one declined
// (failed with the decline code) and one the psp never saw (charged now,
// once). While the psp is down they stay pending, never failed, and the
// oldest-pending gauge grows.
func TestReconcilerSettlesStrandedPayments(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"PSP_FAIL_AFTER_RATE": "1"})
	lost := e.newPayment(4200, "cus_lost_answer")
	declined := e.newPayment(1000, "decline_stranded")
	unseen := e.newPayment(3100, "cus_unseen")
	if _, err := e.chargeDirectly(lost); !errors.Is(err, pspclient.ErrTransient) {
		t.Fatalf("charge under fail_after: %v, want the answer lost", err)
	}
	if c, err := e.chargeDirectly(declined); err != nil || c.Status != pspclient.StatusDeclined {
		t.Fatalf("decline: %+v, %v", c, err)
	}
	e.setPSP(pspclient.ConfigPatch{FailAfterRate: new(0.0), FailBeforeRate: new(1.0)}) // the psp is down
	w := e.startWorker("reconciler", reconcileEnv(500*time.Millisecond))

	eventually(t, 10*time.Second, func() string {
		if got := w.metric(t, reconciled(reconcile.PSPUnavailable)); got < 6 {
			return fmt.Sprintf("%v lookups failed so far", got)
		}
		if got := w.metric(t, oldestPending); got < 1 {
			return fmt.Sprintf("oldest pending payment %vs old, want >= 1s", got)
		}
		return ""
	})
	for _, p := range []payment{lost, declined, unseen} {
		if r := e.row(p.ID); r.Status != "pending" {
			t.Errorf("%s during the psp outage: %+v, want pending", p.Customer, r)
		}
	}

	e.setPSP(pspclient.ConfigPatch{FailBeforeRate: new(0.0)})
	e.waitTerminal(10*time.Second, lost.ID, declined.ID, unseen.ID)

	l := e.ledger(lost.ID)
	if len(l.Charges) != 1 || len(l.Calls) != 1 || l.Calls[0].Outcome != pspclient.OutcomeFailAfter {
		t.Errorf("lost answer: ledger %+v, want the one fail_after call and its charge", l)
	} else if r := e.row(lost.ID); r.Status != "succeeded" || r.Charge != l.Charges[0].ID {
		t.Errorf("lost answer: payment %+v, want succeeded with %s", r, l.Charges[0].ID)
	}
	if r, l := e.row(declined.ID), e.ledger(declined.ID); r.Status != "failed" || r.Reason != "card_declined" || len(l.Calls) != 1 {
		t.Errorf("declined: payment %+v, %d psp calls; want failed card_declined after the one call", r, len(l.Calls))
	}
	l = e.ledger(unseen.ID)
	if len(l.Charges) != 1 {
		t.Errorf("unseen: psp charged %d times, want 1", len(l.Charges))
	} else if r := e.row(unseen.ID); r.Status != "succeeded" || r.Charge != l.Charges[0].ID {
		t.Errorf("unseen: payment %+v, want succeeded with %s", r, l.Charges[0].ID)
	}
	// A re-drive whose charge failed transiently is re-driven next round.
	if s, rd := w.metric(t, reconciled(reconcile.Settled)), w.metric(t, reconciled(reconcile.Redriven)); s != 2 || rd < 1 {
		t.Errorf("settled %v, redriven %v; want 2 and at least 1", s, rd)
	}
	eventually(t, 5*time.Second, func() string {
		if got := w.metric(t, oldestPending); got != 0 {
			return fmt.Sprintf("oldest pending payment %vs old, want 0 (none pending)", got)
		}
		return ""
	})
}

// The reconciler and the deliveries of the same payments race, in two
// workers: each payment is charged once and succeeds.
func TestReconcilerRacesDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"PSP_LATENCY": "200ms"})
	ws := []*worker{
		e.startWorker("race-1", reconcileEnv(time.Millisecond)),
		e.startWorker("race-2", reconcileEnv(time.Millisecond)),
	}
	const n = 12
	var ids []string
	for i := range n {
		p := e.newPayment(int64(500+i), fmt.Sprintf("cus_race_%d", i))
		ids = append(ids, p.ID)
		e.publish(e.message(p), 1)
	}
	e.waitTerminal(20*time.Second, ids...)
	e.wantChargedOnce(ids...)
	// The race happened: the reconcilers found stages held by a delivery
	// (or the other reconciler) or charged a payment themselves.
	if got := sum(t, reconciled(reconcile.InProgress), ws...) + sum(t, reconciled(reconcile.Redriven), ws...); got == 0 {
		t.Error("the reconcilers never met a payment in flight: no race was tested")
	}
}

// Payments the reconciler cannot settle (the psp holds a charge under
// their key that disagrees with them: left pending every time) do not
// starve a later stranded payment: each one it looked at goes behind the
// others, so 120 of them, older than the stranded one, delay it by about
// 120 / WORKER_RECONCILE_BATCH rounds, not forever.
func TestReconcilerIsFairToLaterPayments(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const poisoned, batch = 120, 10
	var ids []string
	for i := range poisoned {
		p := e.newPayment(int64(1000+i), fmt.Sprintf("cus_poison_%d", i))
		ids = append(ids, p.ID)
		p.Amount++ // a charge under the payment's key, for another amount
		if _, err := e.chargeDirectly(p); err != nil {
			t.Fatalf("seed the disagreeing charge %d: %v", i, err)
		}
	}
	stranded := e.newPayment(2500, "cus_stranded") // the psp never saw it
	env := reconcileEnv(time.Millisecond)
	env["WORKER_RECONCILE_BATCH"] = fmt.Sprint(batch)
	w := e.startWorker("fair", env)

	e.waitTerminal(30*time.Second, stranded.ID)
	var looks int
	if err := e.db.QueryRow(context.Background(),
		`SELECT coalesce(sum(reconcile_attempts), 0) FROM payments WHERE id = ANY($1)`, ids).Scan(&looks); err != nil {
		t.Fatal(err)
	}
	// The stranded payment is due before any payment put off once, so it
	// comes after the first look at each (poisoned, 13 rounds of 10);
	// rounds run on while this test polls, hence the margin.
	if looks > 2*poisoned {
		t.Errorf("the poisoned payments were looked at %d times before the stranded one was settled, want at most %d", looks, 2*poisoned)
	}
	e.wantChargedOnce(stranded.ID)
	if r := e.row(ids[0]); r.Status != "pending" {
		t.Errorf("a poisoned payment is %+v, want pending (its psp charge disagrees)", r)
	}
	if got := w.metric(t, reconciled(reconcile.Failed)); got < poisoned {
		t.Errorf("reconcile error results %v, want at least %d (each poisoned payment once)", got, poisoned)
	}
}
