package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestTrivialAnswersLikeTheAPI(t *testing.T) {
	t.Parallel()
	req := httptest.NewRequest(http.MethodPost, "/v1/payments", strings.NewReader(`{"amount":1250,"currency":"EUR","customer_id":"cus_42"}`))
	req.Header.Set("Idempotency-Key", "k1")
	rec := httptest.NewRecorder()
	trivial(rec, req)
	if rec.Code != http.StatusAccepted || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, content type %q; want 202 application/json", rec.Code, rec.Header().Get("Content-Type"))
	}
	var got paymentOut
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != "pay_k1" || got.Amount != 1250 || got.Status != "pending" {
		t.Errorf("answer = %+v", got)
	}

	rec = httptest.NewRecorder()
	trivial(rec, httptest.NewRequest(http.MethodPost, "/v1/payments", strings.NewReader(`{`)))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("bad JSON: status %d, want 400", rec.Code)
	}
}
