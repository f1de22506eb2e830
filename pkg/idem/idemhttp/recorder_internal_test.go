package idemhttp

import (
	"net/http"
	"testing"
)

func TestRecorderKeepsOnlyStoredHeaders(t *testing.T) {
	t.Parallel()
	rec := &recorder{header: http.Header{}}
	rec.Header().Set("Content-Type", "application/json")
	rec.Header().Set("Location", "/v1/payments/pay_1")
	rec.Header().Set("X-Request-Id", "abc")
	rec.WriteHeader(http.StatusAccepted)
	rec.WriteHeader(http.StatusInternalServerError) // ignored, like net/http
	_, _ = rec.Write([]byte(`{"id":"pay_1"}`))
	got := rec.response([]string{"Content-Type", "location"})
	if got.Status != http.StatusAccepted || string(got.Body) != `{"id":"pay_1"}` || len(got.Header) != 2 ||
		got.Header.Get("Location") != "/v1/payments/pay_1" {
		t.Errorf("response() = %+v", got)
	}
	all := rec.response(nil)
	if len(all.Header) != 3 {
		t.Errorf("response(nil) headers = %v, want all three", all.Header)
	}
}
