package fault_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/fault/faulttest"
)

// TestPSPOutageSendsTheAdminToken: every admin call of an outage carries
// the token; the knobs go to fail_before_rate 1 and back to what they were.
func TestPSPOutageSendsTheAdminToken(t *testing.T) {
	t.Parallel()
	psp := faulttest.NewPSPAdmin(t, faulttest.PSPConfig{Token: "s3cret-admin-token",
		Knobs: map[string]any{"fail_before_rate": 0.0, "idempotency": true}})

	if err := (&fault.PSPAdmin{URL: psp.URL, Token: "wrong"}).Outage(t.Context(), time.Millisecond); err == nil {
		t.Error("outage with a wrong token: no error")
	}
	if err := (&fault.PSPAdmin{URL: psp.URL, Token: "s3cret-admin-token"}).Outage(t.Context(), 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"fail_before_rate": 1.0}, {"fail_before_rate": 0.0}}
	if diff := cmp.Diff(want, psp.Puts()); diff != "" {
		t.Errorf("PUT /admin/config bodies (-want +got):\n%s", diff)
	}
}

// TestPSPRejectSetsTheKnobAndPutsItBack: a reject fault sets RejectKnob to
// its share for its duration, then the value it found, and only that: the
// psp refuses a PUT of its read-only reject_until, as the fake does.
func TestPSPRejectSetsTheKnobAndPutsItBack(t *testing.T) {
	t.Parallel()
	psp := faulttest.NewPSPAdmin(t, faulttest.PSPConfig{
		Knobs:    map[string]any{fault.RejectKnob: 0.0, "idempotency": true, "reject_until": nil},
		ReadOnly: []string{"reject_until"},
	})
	if err := (&fault.PSPAdmin{URL: psp.URL, Token: "t"}).Reject(t.Context(), 0.3, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{fault.RejectKnob: 0.3, "reject_for_ms": 10.0}, {fault.RejectKnob: 0.0}}
	if diff := cmp.Diff(want, psp.Puts()); diff != "" {
		t.Errorf("PUT /admin/config bodies (-want +got):\n%s", diff)
	}
}
