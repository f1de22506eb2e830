package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/services/psp/internal/charge"
	"github.com/oncepay/oncepay/services/psp/internal/faults"
	"github.com/oncepay/oncepay/services/psp/internal/psptest"
)

var jsonHeader = http.Header{"Content-Type": {"application/json"}}

func TestAdminConfig(t *testing.T) {
	t.Parallel()
	s := psptest.Start(t, faults.Knobs{LatencyMS: 20, LatencyJitterMS: 10, Idempotency: true, Seed: 9})

	got := decodeJSON[faults.Knobs](t, sendAdmin(t, s, http.MethodGet, "/admin/config", nil, ""))
	want := faults.Knobs{LatencyMS: 20, LatencyJitterMS: 10, Idempotency: true, Seed: 9}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("GET (-want +got):\n%s", diff)
	}

	a := sendAdmin(t, s, http.MethodPut, "/admin/config", jsonHeader, `{"fail_after_rate":0.25,"idempotency":false,"latency_ms":0}`)
	if a.Status != http.StatusOK {
		t.Fatalf("PUT: %d %s", a.Status, a.Body)
	}
	want.FailAfterRate, want.Idempotency, want.LatencyMS = 0.25, false, 0
	if diff := cmp.Diff(want, decodeJSON[faults.Knobs](t, a)); diff != "" {
		t.Errorf("PUT answer (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, s.Faults.Knobs()); diff != "" {
		t.Errorf("knobs in force (-want +got):\n%s", diff)
	}
}

func TestAdminConfigRejectsBadInputListingEveryProblem(t *testing.T) {
	t.Parallel()
	s := psptest.Start(t, psptest.Knobs())
	before := s.Faults.Knobs()
	tests := []struct {
		name   string
		body   string
		fields []string
	}{
		{"out of range", `{"latency_ms":-1,"latency_jitter_ms":60001,"fail_before_rate":-0.5,"error_rate":2,"fail_after_rate":1.01}`,
			[]string{"error_rate", "fail_after_rate", "fail_before_rate", "latency_jitter_ms", "latency_ms"}},
		{"wrong types and unknown fields", `{"error_rate":"high","idempotency":"yes","seed":1.5,"chaos":true,"latency":"20ms"}`,
			[]string{"chaos", "error_rate", "idempotency", "latency", "seed"}},
		{"mixed, the good field is not applied either", `{"idempotency":false,"fail_before_rate":7}`,
			[]string{"fail_before_rate"}},
		{"malformed", `{"latency_ms":`, []string{""}},
		{"not an object", `[1,2]`, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := wantProblem(t, sendAdmin(t, s, http.MethodPut, "/admin/config", jsonHeader, tt.body), http.StatusBadRequest)
			var fields []string
			for _, e := range p.Errors {
				fields = append(fields, e.Field)
				if e.In != "body" || e.Detail == "" {
					t.Errorf("error %+v: want in body, with a detail", e)
				}
			}
			if diff := cmp.Diff(tt.fields, fields); diff != "" {
				t.Errorf("fields reported (-want +got):\n%s\nproblem: %+v", diff, p)
			}
		})
	}
	if diff := cmp.Diff(before, s.Faults.Knobs()); diff != "" {
		t.Errorf("rejected updates changed the knobs (-before +after):\n%s", diff)
	}
}

func TestLedgerSummaryAndReset(t *testing.T) {
	t.Parallel()
	s := psptest.Start(t, psptest.Knobs())
	postCharge(t, s, "a", chargeBody(100, "cus_1", "pay_a"))
	postCharge(t, s, "a", chargeBody(100, "cus_1", "pay_a"))
	postCharge(t, s, "a", chargeBody(999, "cus_1", "pay_a"))
	postCharge(t, s, "b", chargeBody(200, "decline_1", "pay_b"))
	postCharge(t, s, "c", chargeBody(300, "cus_1", "pay_c"))
	postCharge(t, s, "", chargeBody(300, "cus_1", "pay_c"))

	l := readLedger(t, s, "pay_a")
	if diff := cmp.Diff([]string{"charged", "replayed", "mismatch"}, outcomes(l.Calls)); diff != "" {
		t.Errorf("pay_a calls (-want +got):\n%s", diff)
	}
	if len(l.Charges) != 1 || l.Charges[0].Reference != "pay_a" || l.Charges[0].CustomerID != "cus_1" || l.Charges[0].Currency != "EUR" {
		t.Errorf("pay_a charges = %+v", l.Charges)
	}
	if all := readLedger(t, s, ""); len(all.Calls) != 6 || len(all.Charges) != 2 {
		t.Errorf("whole ledger: %d calls, %d charges; want 6, 2", len(all.Calls), len(all.Charges))
	}

	want := map[charge.Outcome]int64{}
	for _, o := range charge.Outcomes() {
		want[o] = 0
	}
	want[charge.OutcomeCharged], want[charge.OutcomeReplayed], want[charge.OutcomeMismatch] = 2, 1, 1
	want[charge.OutcomeDeclined], want[charge.OutcomeInvalid] = 1, 1
	sum := readSummary(t, s)
	if diff := cmp.Diff(want, sum.CallsByOutcome); diff != "" {
		t.Errorf("calls_by_outcome (-want +got):\n%s", diff)
	}
	if sum.Calls != 6 || sum.Charges != 2 || len(sum.ReferencesChargedMoreThanOnce) != 0 {
		t.Errorf("summary = %+v", sum)
	}

	if a := sendAdmin(t, s, http.MethodDelete, "/admin/ledger", nil, ""); a.Status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", a.Status, a.Body)
	}
	if sum := readSummary(t, s); sum.Calls != 0 || sum.Charges != 0 {
		t.Errorf("after reset: %+v", sum)
	}
	// Idempotency records went too: the old key charges anew.
	if a := postCharge(t, s, "a", chargeBody(100, "cus_1", "pay_a")); a.Status != http.StatusCreated || a.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("key after reset: %d replayed=%q", a.Status, a.Header.Get("Idempotent-Replayed"))
	}
}
