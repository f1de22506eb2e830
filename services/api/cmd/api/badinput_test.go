package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/oncepay/oncepay/internal/testenv"
)

// TestBadInputConsumesNothing: every rejected request gets its documented
// 4xx problem and leaves no payment, no outbox row and no Redis key.
func TestBadInputConsumesNothing(t *testing.T) {
	t.Parallel()
	a := startAPI(t, apiOptions{})
	auth := "Bearer " + a.keys[a.merchantA]
	tests := []struct {
		name        string
		header      map[string]string // added to valid defaults; "" removes one
		body        string
		wantStatus  int
		wantProblem string
		wantErrors  []fieldError // checked when set
	}{
		{name: "malformed JSON", body: `{"amount": 1250,`, wantStatus: 400, wantProblem: "invalid-request",
			wantErrors: []fieldError{{"", "malformed JSON: the body ends early"}}},
		{name: "not an object", body: `[1, 2]`, wantStatus: 400, wantProblem: "invalid-request",
			wantErrors: []fieldError{{"", "the body must be a JSON object"}}},
		{name: "unknown field", body: `{"amount": 1, "currency": "EUR", "customer_id": "c", "tip": 5}`, wantStatus: 400,
			wantProblem: "invalid-request", wantErrors: []fieldError{{"tip", "unknown field"}}},
		{name: "upper-case field name", body: `{"AMOUNT": 1, "currency": "EUR", "customer_id": "c"}`, wantStatus: 400,
			wantProblem: "invalid-request", wantErrors: []fieldError{{"AMOUNT", "unknown field (field names are case-sensitive: amount)"}}},
		{name: "two spellings of one field", body: `{"amount": 100, "Amount": 200, "currency": "EUR", "customer_id": "c"}`, wantStatus: 400,
			wantProblem: "invalid-request", wantErrors: []fieldError{{"Amount", "unknown field (field names are case-sensitive: amount)"}}},
		{name: "field given twice", body: `{"amount": 100, "currency": "EUR", "customer_id": "c", "amount": 200}`, wantStatus: 400,
			wantProblem: "invalid-request", wantErrors: []fieldError{{"amount", "given more than once"}}},
		{name: "trailing data", body: paymentBody + `{}`, wantStatus: 400, wantProblem: "invalid-request",
			wantErrors: []fieldError{{"", "unexpected data after the JSON object"}}},
		{name: "empty body", body: ``, wantStatus: 400, wantProblem: "invalid-request"},
		{name: "zero amount", body: `{"amount": 0, "currency": "EUR", "customer_id": "c"}`, wantStatus: 400,
			wantProblem: "invalid-request", wantErrors: []fieldError{{"amount", "must be greater than 0 (minor units)"}}},
		{name: "negative amount", body: `{"amount": -5, "currency": "EUR", "customer_id": "c"}`, wantStatus: 400,
			wantProblem: "invalid-request", wantErrors: []fieldError{{"amount", "must be greater than 0 (minor units)"}}},
		{name: "amount over the limit", body: `{"amount": 100000001, "currency": "EUR", "customer_id": "c"}`, wantStatus: 400,
			wantProblem: "invalid-request", wantErrors: []fieldError{{"amount", "must be at most 100000000 (minor units)"}}},
		{name: "fractional amount", body: `{"amount": 12.5, "currency": "EUR", "customer_id": "c"}`, wantStatus: 400,
			wantProblem: "invalid-request", wantErrors: []fieldError{{"amount", "must be an integer"}}},
		{name: "amount as a string", body: `{"amount": "12", "currency": "EUR", "customer_id": "c"}`, wantStatus: 400,
			wantProblem: "invalid-request", wantErrors: []fieldError{{"amount", "must be an integer"}}},
		{name: "missing fields", body: `{}`, wantStatus: 400, wantProblem: "invalid-request", wantErrors: []fieldError{
			{"amount", "is required"}, {"currency", "is required"}, {"customer_id", "is required"}}},
		{name: "unknown currency", body: `{"amount": 1, "currency": "XBT", "customer_id": "c"}`, wantStatus: 400,
			wantProblem: "invalid-request"},
		{name: "lower-case currency", body: `{"amount": 1, "currency": "eur", "customer_id": "c"}`, wantStatus: 400,
			wantProblem: "invalid-request"},
		{name: "customer id too long", body: `{"amount": 1, "currency": "EUR", "customer_id": "` + strings.Repeat("c", 65) + `"}`,
			wantStatus: 400, wantProblem: "invalid-request"},
		{name: "description too long", body: `{"amount": 1, "currency": "EUR", "customer_id": "c", "description": "` +
			strings.Repeat("d", 256) + `"}`, wantStatus: 400, wantProblem: "invalid-request",
			wantErrors: []fieldError{{"description", "must be at most 255 characters without control characters"}}},
		{name: "body over 64 KiB", body: `{"amount": 1, "currency": "EUR", "customer_id": "c", "description": "` +
			strings.Repeat("d", 70_000) + `"}`, wantStatus: 413, wantProblem: "body-too-large"},
		{name: "256-character key", header: map[string]string{"Idempotency-Key": strings.Repeat("k", 256)},
			body: paymentBody, wantStatus: 400, wantProblem: "invalid-idempotency-key"},
		{name: "control character (tab) in key", header: map[string]string{"Idempotency-Key": "abc\tdef"},
			body: paymentBody, wantStatus: 400, wantProblem: "invalid-idempotency-key"},
		{name: "non-ASCII key", header: map[string]string{"Idempotency-Key": "clé-1"},
			body: paymentBody, wantStatus: 400, wantProblem: "invalid-idempotency-key"},
		{name: "empty key", header: map[string]string{"Idempotency-Key": ""},
			body: paymentBody, wantStatus: 400, wantProblem: "invalid-idempotency-key"},
		{name: "wrong content type", header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
			body: paymentBody, wantStatus: 415, wantProblem: "unsupported-media-type"},
		{name: "no content type", header: map[string]string{"Content-Type": ""},
			body: paymentBody, wantStatus: 415, wantProblem: "unsupported-media-type"},
		{name: "latin1 charset", header: map[string]string{"Content-Type": "application/json; charset=iso-8859-1"},
			body: paymentBody, wantStatus: 415, wantProblem: "unsupported-media-type"},
		{name: "bad API key wins over a bad body", header: map[string]string{"Authorization": auth + "nope"},
			body: `{`, wantStatus: 401, wantProblem: "unauthorized"},
		{name: "bad key wins over a bad body", header: map[string]string{"Idempotency-Key": "a b"},
			body: `{`, wantStatus: 400, wantProblem: "invalid-idempotency-key"},
		{name: "content type wins over size", header: map[string]string{"Content-Type": "text/plain"},
			body: strings.Repeat("x", 70_000), wantStatus: 415, wantProblem: "unsupported-media-type"},
	}
	// The group returns once all its parallel subtests are done.
	t.Run("rejections", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				header := map[string]string{"Authorization": auth, "Idempotency-Key": testenv.Name(t, "k"), "Content-Type": "application/json"}
				for k, v := range tt.header {
					header[k] = v
					if v == "" && k != "Idempotency-Key" {
						delete(header, k)
					}
				}
				r := a.do(t, http.MethodPost, "/v1/payments", header, []byte(tt.body))
				if r.Status != tt.wantStatus {
					t.Fatalf("status = %d, want %d; body %s", r.Status, tt.wantStatus, r.Body)
				}
				if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
					t.Errorf("Content-Type = %q, want application/problem+json", ct)
				}
				p := r.problem(t)
				if p.Type != "urn:oncepay:api:problem:"+tt.wantProblem || p.Status != tt.wantStatus {
					t.Errorf("problem = %+v, want type %s", p, tt.wantProblem)
				}
				if tt.wantErrors != nil {
					if diff := cmp.Diff(tt.wantErrors, p.Errors); diff != "" {
						t.Errorf("field errors mismatch (-want +got):\n%s", diff)
					}
				}
			})
		}
	})
	t.Run("nothing consumed", func(t *testing.T) {
		if n := a.count(t, `SELECT count(*) FROM payments`); n != 0 {
			t.Errorf("%d payment rows, want 0", n)
		}
		if n := a.count(t, `SELECT count(*) FROM outbox`); n != 0 {
			t.Errorf("%d outbox rows, want 0", n)
		}
		if keys := a.redisKeys(t, a.merchantA); len(keys) != 0 {
			t.Errorf("redis keys %q, want none", keys)
		}
	})
}
