package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/oncepay/oncepay/services/psp/internal/psptest"
)

// adminRoutes are every admin endpoint, with a body that would change
// something if it were accepted.
var adminRoutes = []struct{ method, path, body string }{
	{http.MethodGet, "/admin/config", ""},
	{http.MethodPut, "/admin/config", `{"idempotency":false}`},
	{http.MethodGet, "/admin/ledger", ""},
	{http.MethodDelete, "/admin/ledger", ""},
	{http.MethodGet, "/admin/ledger/summary", ""},
}

// TestChargesPortHasNoAdminEndpoints: /admin/* answers 404 on the charges
// port, with or without the token, and changes nothing.
func TestChargesPortHasNoAdminEndpoints(t *testing.T) {
	t.Parallel()
	s := psptest.Start(t, psptest.Knobs())
	if a := postCharge(t, s, "k", chargeBody(100, "cus_1", "pay_1")); a.Status != http.StatusCreated {
		t.Fatalf("charge: %d %s", a.Status, a.Body)
	}
	for _, r := range adminRoutes {
		for _, h := range []http.Header{jsonHeader, {"Content-Type": {"application/json"}, "Authorization": {"Bearer " + s.AdminToken}}} {
			wantProblem(t, send(t, r.method, s.URL+r.path, h, r.body), http.StatusNotFound)
		}
	}
	if !s.Faults.Knobs().Idempotency {
		t.Error("idempotency was turned off through the charges port")
	}
	if sum := readSummary(t, s); sum.Charges != 1 {
		t.Errorf("charges = %d after the admin calls on the charges port, want 1 (not erased)", sum.Charges)
	}
}

// TestAdminListenerNeedsTheToken: every admin endpoint answers 401 with no
// token, a wrong one, or another scheme, and changes nothing; the right
// token works.
func TestAdminListenerNeedsTheToken(t *testing.T) {
	t.Parallel()
	s := psptest.Start(t, psptest.Knobs())
	if a := postCharge(t, s, "k", chargeBody(100, "cus_1", "pay_1")); a.Status != http.StatusCreated {
		t.Fatalf("charge: %d %s", a.Status, a.Body)
	}
	bad := map[string]string{
		"none":          "",
		"wrong":         "Bearer " + s.AdminToken + "x",
		"prefix":        "Bearer " + s.AdminToken[:len(s.AdminToken)-1],
		"empty bearer":  "Bearer ",
		"basic":         "Basic " + s.AdminToken,
		"token only":    s.AdminToken,
		"other spacing": "Bearer  " + s.AdminToken,
	}
	for name, auth := range bad {
		t.Run(name, func(t *testing.T) {
			for _, r := range append(adminRoutes, struct{ method, path, body string }{http.MethodGet, "/admin/nothing", ""}) {
				h := http.Header{"Content-Type": {"application/json"}}
				if auth != "" {
					h.Set("Authorization", auth)
				}
				a := send(t, r.method, s.AdminURL+r.path, h, r.body)
				wantProblem(t, a, http.StatusUnauthorized)
				if got := a.Header.Get("WWW-Authenticate"); got == "" {
					t.Errorf("%s %s: no WWW-Authenticate", r.method, r.path)
				}
			}
		})
	}
	if !s.Faults.Knobs().Idempotency {
		t.Error("idempotency was turned off without the token")
	}
	if sum := readSummary(t, s); sum.Charges != 1 {
		t.Errorf("charges = %d after calls without the token, want 1 (not erased)", sum.Charges)
	}
	h := http.Header{"Authorization": {"bearer " + s.AdminToken}} // the scheme is case-insensitive
	if a := send(t, http.MethodGet, s.AdminURL+"/admin/ledger/summary", h, ""); a.Status != http.StatusOK {
		t.Errorf("with the token: %d %s", a.Status, a.Body)
	}
	if a := sendAdmin(t, s, http.MethodPost, "/v1/charges", chargeHeader("k2"), chargeBody(100, "cus_1", "pay_2")); a.Status != http.StatusNotFound {
		t.Errorf("POST /v1/charges on the admin listener: %d, want 404", a.Status)
	}
}
