package httpapi_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/services/psp/internal/charge"
	"github.com/oncepay/oncepay/services/psp/internal/faults"
	"github.com/oncepay/oncepay/services/psp/internal/psptest"
)

// The reject fault, set through the admin API with a window, rejects a
// new charge for good: 400 charge-rejected with a reason, nothing
// charged, and the same key replays the rejection after the fault is off
// (a lookup finds nothing charged or declined). A new key then charges.
func TestRejectRateRejectsForGood(t *testing.T) {
	t.Parallel()
	s := psptest.Start(t, psptest.Knobs())
	a := sendAdmin(t, s, http.MethodPut, "/admin/config", http.Header{"Content-Type": {"application/json"}},
		`{"reject_rate":1,"reject_for_ms":600000}`)
	k := decodeJSON[faults.Knobs](t, a)
	if a.Status != http.StatusOK || k.RejectRate != 1 || k.RejectUntil == nil || k.RejectUntil.Before(time.Now().Add(9*time.Minute)) {
		t.Fatalf("PUT /admin/config = %d %s, want reject_rate 1 for 10 minutes", a.Status, a.Body)
	}

	body := chargeBody(700, "cus_1", "pay_1")
	first := postCharge(t, s, "key-1", body)
	p := wantProblem(t, first, http.StatusBadRequest)
	if !strings.HasSuffix(p.Type, ":charge-rejected") || !strings.Contains(p.Detail, "reject_rate") {
		t.Errorf("rejection = %+v, want type …charge-rejected and a detail naming the fault", p)
	}

	setKnobs(t, s, faults.Patch{RejectRate: new(0.0)})
	again := postCharge(t, s, "key-1", body)
	if again.Status != http.StatusBadRequest || !bytes.Equal(again.Body, first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry with the key after the fault: %d replayed=%q %s; want the rejection replayed", again.Status,
			again.Header.Get("Idempotent-Replayed"), again.Body)
	}
	wantProblem(t, again, http.StatusBadRequest)
	if l := send(t, http.MethodGet, s.URL+"/v1/charges?idempotency_key=key-1", nil, ""); l.Status != http.StatusNotFound {
		t.Errorf("lookup of the rejected key = %d %s, want 404 (nothing charged or declined)", l.Status, l.Body)
	}
	if c := postCharge(t, s, "key-2", chargeBody(700, "cus_1", "pay_2")); c.Status != http.StatusCreated {
		t.Errorf("a new key after the fault: %d %s, want 201", c.Status, c.Body)
	}

	l := readLedger(t, s, "pay_1")
	if diff := cmp.Diff([]string{string(charge.OutcomeRejected), string(charge.OutcomeReplayed)}, outcomes(l.Calls)); diff != "" {
		t.Errorf("call outcomes (-want +got):\n%s", diff)
	}
	for _, c := range l.Calls {
		if c.ChargeID != nil || deref(c.HTTPStatus) != http.StatusBadRequest {
			t.Errorf("call %+v: want no charge id, status 400", c)
		}
	}
	if len(l.Charges) != 0 {
		t.Errorf("%d charges for the rejected payment, want 0", len(l.Charges))
	}
	if sum := readSummary(t, s); sum.CallsByOutcome[charge.OutcomeRejected] != 1 || sum.Charges != 1 {
		t.Errorf("summary %+v, want 1 rejected call and 1 charge", sum)
	}
}

// A share of the charges is rejected; a replay or a decline is never
// turned into a rejection.
func TestRejectRateIsAShareOfNewCharges(t *testing.T) {
	t.Parallel()
	s := psptest.Start(t, psptest.Knobs())
	ok := postCharge(t, s, "key-ok", chargeBody(700, "cus_1", "pay_ok"))
	setKnobs(t, s, faults.Patch{RejectRate: new(0.5), Seed: new(int64(11))})
	if again := postCharge(t, s, "key-ok", chargeBody(700, "cus_1", "pay_ok")); !bytes.Equal(again.Body, ok.Body) || again.Status != http.StatusCreated {
		t.Errorf("replay under the fault: %d %s, want the stored 201", again.Status, again.Body)
	}
	counts := map[int]int{}
	const n = 60
	for i := range n {
		ref := "pay_" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		counts[postCharge(t, s, "key-"+ref, chargeBody(int64(500+i), "cus_1", ref)).Status]++
	}
	if counts[http.StatusBadRequest] < n/5 || counts[http.StatusBadRequest] > n*4/5 || counts[http.StatusBadRequest]+counts[http.StatusCreated] != n {
		t.Errorf("answers %v to %d new charges at reject_rate 0.5, want about half 400, the rest 201", counts, n)
	}
}
