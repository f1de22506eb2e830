package main

import (
	"strings"
	"testing"
	"time"

	"github.com/oncepay/oncepay/services/psp/pspclient"

	"github.com/oncepay/oncepay/services/worker/internal/metrics"
)

// A charge the psp rejects for good (its reject fault, or a request its
// validator refuses) fails the payment with the psp's reason: acked, never
// dead-lettered, never left pending, and charged nothing. A redelivery is
// a duplicate.
func TestRejectedChargesFailThePayment(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	w := e.startWorker("rejection", nil)

	e.setPSP(pspclient.ConfigPatch{RejectRate: new(1.0)})
	faulted := e.newPayment(900, "cus_rejected")
	e.publish(e.message(faulted), 1)
	e.waitTerminal(15*time.Second, faulted.ID)
	e.setPSP(pspclient.ConfigPatch{RejectRate: new(0.0)})

	// A row the api would never write: the psp's validator refuses it.
	invalid := e.newPayment(901, strings.Repeat("c", 256))
	e.publish(e.message(invalid), 1)
	e.waitTerminal(15*time.Second, invalid.ID)

	for _, tt := range []struct {
		p      payment
		reason string
	}{
		{faulted, "rejected: charge-rejected: injected fault (reject_rate)"},
		{invalid, "rejected: invalid-request: customer_id must be at most 255 characters"},
	} {
		if r := e.row(tt.p.ID); r.Status != "failed" || r.Charge != "" || !strings.HasPrefix(r.Reason, tt.reason) {
			t.Errorf("payment %s = %+v, want failed with a reason starting %q", tt.p.Customer[:8], r, tt.reason)
		}
		if l := e.ledger(tt.p.ID); len(l.Charges) != 0 {
			t.Errorf("payment %s: %d psp charges, want 0", tt.p.Customer[:8], len(l.Charges))
		}
	}
	e.publish(e.message(faulted), 1) // a redelivery
	eventually(t, 10*time.Second, func() string {
		if w.metric(t, outcome(metrics.Duplicate)) < 1 {
			return "the redelivery was not acked as a duplicate"
		}
		return ""
	})
	if got := w.metric(t, outcome(metrics.Rejected)); got != 2 {
		t.Errorf("rejected = %v, want 2", got)
	}
	if got := w.metric(t, outcome(metrics.DeadLettered)); got != 0 {
		t.Errorf("dead_lettered = %v, want 0", got)
	}
	if d := e.queueDepth(e.topo.DeadLetterQueue()); d != 0 {
		t.Errorf("%d messages in the DLQ, want 0", d)
	}
	if r := e.row(faulted.ID); r.Status != "failed" {
		t.Errorf("after the redelivery: %+v, want still failed", r)
	}
}

// Every customer_id the api accepts, the psp accepts too: 64 four-byte
// characters (256 bytes) get 202 from the api and the payment is charged.
func TestFourByteCustomerIDIsCharged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	api := e.startAPI()
	e.startWorker("runes", nil)
	id := api.payFor(t, "runes-"+randHex(4), 1234, strings.Repeat("𝄞", 64))
	if id == "" {
		t.FailNow()
	}
	e.waitTerminal(20*time.Second, id)
	e.wantChargedOnce(id)
}
