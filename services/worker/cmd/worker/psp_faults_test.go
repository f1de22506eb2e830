package main

import (
	"testing"
	"time"

	"github.com/oncepay/oncepay/services/psp/pspclient"

	"github.com/oncepay/oncepay/services/worker/internal/metrics"
)

// The psp charges and then drops the connection (fail_after_rate 1 for the
// first call, then 0): the worker retries with the same key and gets the
// same charge back; one effective charge.
func TestPSPChargeThenNoAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"PSP_FAIL_AFTER_RATE": "1"})
	w := e.startWorker("failafter", nil)
	p := e.newPayment(4200, "cus_failafter")
	e.publish(e.message(p), 1)

	e.afterLostAnswer(p.ID)

	l := e.ledger(p.ID)
	if len(l.Charges) != 1 {
		t.Fatalf("psp charged %d times, want 1: %+v", len(l.Charges), l)
	}
	if len(l.Calls) < 2 || l.Calls[0].Outcome != pspclient.OutcomeFailAfter {
		t.Fatalf("calls %+v: want fail_after first, then a retry", l.Calls)
	}
	for _, c := range l.Calls[1:] {
		if c.Outcome != pspclient.OutcomeReplayed || c.ChargeID != l.Charges[0].ID {
			t.Errorf("retry call %+v: want the stored charge %s replayed", c, l.Charges[0].ID)
		}
	}
	if r := e.row(p.ID); r.Status != "succeeded" || r.Charge != l.Charges[0].ID {
		t.Errorf("payment = %+v, want succeeded with %s", r, l.Charges[0].ID)
	}
	if got := w.metric(t, outcome(metrics.TransientRetry)); got < 1 {
		t.Errorf("transient_retry = %v, want >= 1", got)
	}
}

// Declines end the payment as failed with the decline code, after one psp
// call, without retries.
func TestDeclinesAreTerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	w := e.startWorker("declines", nil)
	tests := []struct {
		name   string
		p      payment
		reason string
	}{
		{"card declined", e.newPayment(1000, "decline_card_1"), "card_declined"},
		{"insufficient funds", e.newPayment(402, "cus_poor"), "insufficient_funds"},
	}
	for _, tt := range tests {
		e.publish(e.message(tt.p), 1)
	}
	for _, tt := range tests {
		e.waitTerminal(10*time.Second, tt.p.ID)
	}
	time.Sleep(300 * time.Millisecond) // a retry would have happened by now
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r := e.row(tt.p.ID); r.Status != "failed" || r.Reason != tt.reason || r.Charge != "" {
				t.Errorf("payment = %+v, want failed with %s and no charge id", r, tt.reason)
			}
			l := e.ledger(tt.p.ID)
			if len(l.Calls) != 1 || l.Calls[0].Outcome != pspclient.OutcomeDeclined || len(l.Charges) != 0 {
				t.Errorf("psp ledger %+v: want one declined call, no charge", l)
			}
		})
	}
	if got := w.metric(t, outcome(metrics.Declined)); got != 2 {
		t.Errorf("declined = %v, want 2", got)
	}
	if got := w.metric(t, outcome(metrics.TransientRetry)); got != 0 {
		t.Errorf("transient_retry = %v, want 0", got)
	}
}
