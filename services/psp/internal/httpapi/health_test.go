package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/oncepay/oncepay/services/psp/internal/psptest"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	s := psptest.Start(t, psptest.Knobs())
	for _, path := range []string{"/livez", "/readyz"} {
		if a := send(t, http.MethodGet, s.OpsURL+path, nil, ""); a.Status != http.StatusOK {
			t.Errorf("GET %s = %d %s", path, a.Status, a.Body)
		}
	}
	s.Draining.Store(true)
	if a := send(t, http.MethodGet, s.OpsURL+"/readyz", nil, ""); a.Status != http.StatusServiceUnavailable || !strings.Contains(string(a.Body), `"draining"`) {
		t.Errorf("GET /readyz while draining = %d %s, want 503 draining", a.Status, a.Body)
	}
	if a := send(t, http.MethodGet, s.OpsURL+"/livez", nil, ""); a.Status != http.StatusOK {
		t.Errorf("GET /livez while draining = %d", a.Status)
	}
}

// TestOpsEndpointsAreNotOnTheChargesPort: /livez, /readyz and /metrics
// answer 404 on the charges port; the ops listener serves them.
func TestOpsEndpointsAreNotOnTheChargesPort(t *testing.T) {
	t.Parallel()
	s := psptest.Start(t, psptest.Knobs())
	for _, path := range []string{"/livez", "/readyz", "/metrics"} {
		if a := send(t, http.MethodGet, s.URL+path, nil, ""); a.Status != http.StatusNotFound {
			t.Errorf("charges port: GET %s = %d, want 404", path, a.Status)
		}
		if a := send(t, http.MethodGet, s.OpsURL+path, nil, ""); a.Status != http.StatusOK {
			t.Errorf("ops port: GET %s = %d, want 200", path, a.Status)
		}
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	s := psptest.Start(t, psptest.Knobs())
	postCharge(t, s, "m", chargeBody(100, "cus_1", "pay_m"))
	postCharge(t, s, "m", chargeBody(100, "cus_1", "pay_m"))
	a := send(t, http.MethodGet, s.OpsURL+"/metrics", nil, "")
	if a.Status != http.StatusOK {
		t.Fatalf("GET /metrics = %d", a.Status)
	}
	for _, want := range []string{
		`psp_calls_total{outcome="charged"} 1`,
		`psp_calls_total{outcome="replayed"} 1`,
		`psp_calls_total{outcome="fail_after"} 0`,
		`psp_charges_total 1`,
		`psp_request_duration_seconds_bucket{code="201",method="POST",route="/v1/charges",le="+Inf"} 2`,
	} {
		if !strings.Contains(string(a.Body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestUnknownRoutesAndRequestID(t *testing.T) {
	t.Parallel()
	s := psptest.Start(t, psptest.Knobs())
	p := wantProblem(t, send(t, http.MethodGet, s.URL+"/v1/nothing", http.Header{"X-Request-Id": {"req-42"}}, ""), http.StatusNotFound)
	if p.RequestID != "req-42" {
		t.Errorf("request_id = %q, want the caller's req-42", p.RequestID)
	}
	a := send(t, http.MethodDelete, s.URL+"/v1/charges", nil, "")
	wantProblem(t, a, http.StatusMethodNotAllowed)
	if a.Header.Get("X-Request-Id") == "" {
		t.Error("no X-Request-Id on the answer")
	}
}
