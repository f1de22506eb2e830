package reconcile

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/services/psp/pspclient"

	"github.com/oncepay/oncepay/services/worker/internal/payments"
)

func TestOutcomeOf(t *testing.T) {
	t.Parallel()
	p := payments.Payment{ID: "pay_1", Amount: 4200, Currency: "EUR"}
	charged := pspclient.Charge{ID: "ch_1", Status: pspclient.StatusSucceeded, Amount: 4200, Currency: "EUR", Reference: "pay_1"}
	declined := pspclient.Charge{ID: "ch_2", Status: pspclient.StatusDeclined, DeclineCode: "card_declined", Amount: 4200, Currency: "EUR", Reference: "pay_1"}
	with := func(c pspclient.Charge, f func(*pspclient.Charge)) pspclient.Charge { f(&c); return c }
	tests := []struct {
		name    string
		c       pspclient.Charge
		want    payments.Outcome
		wantErr bool
	}{
		{"charged", charged, payments.Outcome{Status: payments.Succeeded, PSPChargeID: "ch_1"}, false},
		{"declined", declined, payments.Outcome{Status: payments.Failed, FailureReason: "card_declined"}, false},
		{"another payment", with(charged, func(c *pspclient.Charge) { c.Reference = "pay_2" }), payments.Outcome{}, true},
		{"another amount", with(charged, func(c *pspclient.Charge) { c.Amount = 1 }), payments.Outcome{}, true},
		{"another currency", with(charged, func(c *pspclient.Charge) { c.Currency = "USD" }), payments.Outcome{}, true},
		{"charged without an id", with(charged, func(c *pspclient.Charge) { c.ID = "" }), payments.Outcome{}, true},
		{"unknown status", with(charged, func(c *pspclient.Charge) { c.Status = "processing" }), payments.Outcome{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := outcomeOf(tt.c, p)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %t", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}
