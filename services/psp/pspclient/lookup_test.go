package pspclient_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/oncepay/oncepay/services/psp/internal/faults"
	"github.com/oncepay/oncepay/services/psp/internal/psptest"
	"github.com/oncepay/oncepay/services/psp/pspclient"
)

// A charge whose answer was lost (fail_after) is found by its key, with the
// id the ledger holds; a decline is found as a decline; a lookup charges
// nothing.
func TestLookupFindsTheStoredCharge(t *testing.T) {
	t.Parallel()
	c, s := start(t, psptest.Knobs())
	ctx := t.Context()
	if _, err := s.Faults.Update(faults.Patch{FailAfterRate: new(1.0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Charge(ctx, "lost-answer", req); !errors.Is(err, pspclient.ErrTransient) {
		t.Fatalf("charge under fail_after: err = %v, want ErrTransient", err)
	}
	if _, err := s.Faults.Update(faults.Patch{FailAfterRate: new(0.0)}); err != nil {
		t.Fatal(err)
	}
	declined := req
	declined.CustomerID, declined.Reference = "decline_me", "pay_2"
	if _, err := c.Charge(ctx, "declined", declined); err != nil {
		t.Fatal(err)
	}

	got, err := c.Lookup(ctx, "lost-answer")
	if err != nil {
		t.Fatalf("lookup: %v", err)
	}
	l, err := admin(s).Ledger(ctx, "pay_1")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Charges) != 1 || got.ID != l.Charges[0].ID || got.Status != pspclient.StatusSucceeded || got.Amount != req.Amount {
		t.Errorf("lookup = %+v, ledger charges %+v: want the one charge", got, l.Charges)
	}
	if d, err := c.Lookup(ctx, "declined"); err != nil || d.Status != pspclient.StatusDeclined || d.DeclineCode != "card_declined" {
		t.Errorf("lookup of a decline = %+v, %v", d, err)
	}
	if l, err := admin(s).Ledger(ctx, ""); err != nil || len(l.Charges) != 1 || len(l.Calls) != 2 {
		t.Errorf("ledger after lookups: %d charges, %d calls (err %v); want 1 and 2", len(l.Charges), len(l.Calls), err)
	}
}

func TestLookupErrors(t *testing.T) {
	t.Parallel()
	c, s := start(t, psptest.Knobs())
	ctx := t.Context()
	if _, err := c.Lookup(ctx, "never-used"); !errors.Is(err, pspclient.ErrNoCharge) {
		t.Errorf("unknown key: err = %v, want ErrNoCharge", err)
	}
	if _, err := c.Lookup(ctx, ""); err == nil || errors.Is(err, pspclient.ErrTransient) {
		t.Errorf("empty key: err = %v, want a 400", err)
	} else if e, ok := errors.AsType[*pspclient.Error](err); !ok || e.StatusCode != http.StatusBadRequest {
		t.Errorf("empty key: err = %v, want a 400", err)
	}
	if _, err := s.Faults.Update(faults.Patch{FailBeforeRate: new(1.0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lookup(ctx, "never-used"); !errors.Is(err, pspclient.ErrTransient) {
		t.Errorf("during an outage: err = %v, want ErrTransient", err)
	}
}
