package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/idem"
)

const paymentBody = `{"amount": 1250, "currency": "EUR", "customer_id": "cus_42", "description": "order 42"}`

// TestStatusCodeContract runs every row of the HTTP contract through the
// real router of a running api.
func TestStatusCodeContract(t *testing.T) {
	t.Parallel()
	a := startAPI(t, apiOptions{})
	down := startAPI(t, apiOptions{notReady: true, env: map[string]string{"REDIS_URL": "redis://" + closedAddr(t) + "/2"}})

	tests := []struct {
		name        string
		send        func(t *testing.T) response
		wantStatus  int
		wantHeader  map[string]string // exact values
		wantProblem string            // problem type suffix; "" for success answers
		check       func(t *testing.T, r response)
	}{
		{
			name:       "202 first request",
			send:       func(t *testing.T) response { return a.post(t, a.merchantA, testenv.Name(t, "k"), paymentBody) },
			wantStatus: http.StatusAccepted,
			wantHeader: map[string]string{"Content-Type": "application/json"},
			check: func(t *testing.T, r response) {
				var got map[string]any
				if err := json.Unmarshal(r.Body, &got); err != nil {
					t.Fatal(err)
				}
				id := paymentID(t, r.Body)
				if loc := r.Header.Get("Location"); loc != "/v1/payments/"+id {
					t.Errorf("Location = %q, want /v1/payments/%s", loc, id)
				}
				if r.Header.Get("Idempotent-Replayed") != "" {
					t.Error("a first answer carries Idempotent-Replayed")
				}
				created, err := time.Parse(time.RFC3339Nano, got["created_at"].(string))
				if err != nil || time.Since(created) > time.Minute {
					t.Errorf("created_at = %v (%v), want about now", got["created_at"], err)
				}
				delete(got, "id")
				delete(got, "created_at")
				want := map[string]any{"merchant_id": a.merchantA, "status": "pending", "amount": 1250.0,
					"currency": "EUR", "customer_id": "cus_42", "description": "order 42"}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("body mismatch (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "202 replay, byte-identical",
			send: func(t *testing.T) response {
				key := testenv.Name(t, "k")
				first := a.post(t, a.merchantA, key, paymentBody)
				// Same payload with other key order and spacing: same fingerprint.
				again := a.post(t, a.merchantA, key, `{"currency":"EUR","amount":1250,"description":"order 42","customer_id":"cus_42"}`)
				if !bytes.Equal(first.Body, again.Body) || first.Header.Get("Location") != again.Header.Get("Location") {
					t.Errorf("replay differs:\nfirst  %s %q\nreplay %s %q", first.Body, first.Header.Get("Location"),
						again.Body, again.Header.Get("Location"))
				}
				return again
			},
			wantStatus: http.StatusAccepted,
			wantHeader: map[string]string{"Idempotent-Replayed": "true", "Content-Type": "application/json"},
		},
		{
			name: "409 while the first request holds the lease",
			send: func(t *testing.T) response {
				key := testenv.Name(t, "k")
				other := idem.New(a.rdb, idem.Config{Lease: 10 * time.Second})
				k, _ := idem.NewKey(a.merchantA, key)
				fp, _ := idem.Fingerprint(http.MethodPost, "/v1/payments", []byte(paymentBody))
				if _, err := other.Begin(context.Background(), k, "api", fp); err != nil {
					t.Fatal(err)
				}
				return a.post(t, a.merchantA, key, paymentBody)
			},
			wantStatus:  http.StatusConflict,
			wantProblem: "in-progress",
			check: func(t *testing.T, r response) {
				secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
				if err != nil || secs < 1 || secs > 10 {
					t.Errorf("Retry-After = %q, want 1..10 seconds", r.Header.Get("Retry-After"))
				}
			},
		},
		{
			name: "422 same key, different payload",
			send: func(t *testing.T) response {
				key := testenv.Name(t, "k")
				a.post(t, a.merchantA, key, paymentBody)
				return a.post(t, a.merchantA, key, strings.Replace(paymentBody, "1250", "1251", 1))
			},
			wantStatus:  http.StatusUnprocessableEntity,
			wantProblem: "idempotency-key-reused",
		},
		{
			name: "400 missing Idempotency-Key",
			send: func(t *testing.T) response {
				return a.do(t, http.MethodPost, "/v1/payments", map[string]string{
					"Authorization": "Bearer " + a.keys[a.merchantA], "Content-Type": "application/json"}, []byte(paymentBody))
			},
			wantStatus:  http.StatusBadRequest,
			wantProblem: "invalid-idempotency-key",
		},
		{
			name:        "400 malformed Idempotency-Key",
			send:        func(t *testing.T) response { return a.post(t, a.merchantA, "has space", paymentBody) },
			wantStatus:  http.StatusBadRequest,
			wantProblem: "invalid-idempotency-key",
		},
		{
			name: "400 invalid body lists every field",
			send: func(t *testing.T) response {
				return a.post(t, a.merchantA, testenv.Name(t, "k"), `{"amount": 0, "currency": "XXX", "customer_id": ""}`)
			},
			wantStatus:  http.StatusBadRequest,
			wantProblem: "invalid-request",
			check: func(t *testing.T, r response) {
				want := []fieldError{
					{"amount", "must be greater than 0 (minor units)"},
					{"currency", "must be one of AUD, CAD, CHF, CZK, DKK, EUR, GBP, JPY, NOK, PLN, SEK, USD"},
					{"customer_id", "must be 1-64 characters without control characters"},
				}
				if diff := cmp.Diff(want, r.problem(t).Errors); diff != "" {
					t.Errorf("field errors mismatch (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "413 body over 64 KiB",
			send: func(t *testing.T) response {
				big := `{"amount": 1, "currency": "EUR", "customer_id": "c", "description": "` + strings.Repeat("x", 64<<10) + `"}`
				return a.post(t, a.merchantA, testenv.Name(t, "k"), big)
			},
			wantStatus:  http.StatusRequestEntityTooLarge,
			wantProblem: "body-too-large",
		},
		{
			name: "415 not JSON",
			send: func(t *testing.T) response {
				return a.do(t, http.MethodPost, "/v1/payments", map[string]string{"Authorization": "Bearer " + a.keys[a.merchantA],
					"Idempotency-Key": testenv.Name(t, "k"), "Content-Type": "text/plain"}, []byte(paymentBody))
			},
			wantStatus:  http.StatusUnsupportedMediaType,
			wantProblem: "unsupported-media-type",
		},
		{
			name: "401 no API key",
			send: func(t *testing.T) response {
				return a.do(t, http.MethodPost, "/v1/payments", map[string]string{"Idempotency-Key": "k1",
					"Content-Type": "application/json"}, []byte(paymentBody))
			},
			wantStatus:  http.StatusUnauthorized,
			wantHeader:  map[string]string{"WWW-Authenticate": `Bearer realm="oncepay"`},
			wantProblem: "unauthorized",
		},
		{
			name: "401 bad API key",
			send: func(t *testing.T) response {
				return a.do(t, http.MethodGet, "/v1/payments/pay_x", map[string]string{"Authorization": "Bearer " + a.keys[a.merchantA] + "x"}, nil)
			},
			wantStatus:  http.StatusUnauthorized,
			wantProblem: "unauthorized",
		},
		{
			name: "200 own payment",
			send: func(t *testing.T) response {
				return a.get(t, a.merchantA, paymentID(t, a.post(t, a.merchantA, testenv.Name(t, "k"), paymentBody).Body))
			},
			wantStatus: http.StatusOK,
			check: func(t *testing.T, r response) {
				var got map[string]any
				json.Unmarshal(r.Body, &got)
				for _, field := range []string{"id", "status", "amount", "currency", "customer_id", "description",
					"psp_charge_id", "failure_reason", "created_at", "updated_at"} {
					if _, ok := got[field]; !ok {
						t.Errorf("GET body %s has no %q", r.Body, field)
					}
				}
				if got["status"] != "pending" {
					t.Errorf("status = %v, want pending", got["status"])
				}
			},
		},
		{
			name: "404 another merchant's payment",
			send: func(t *testing.T) response {
				return a.get(t, a.merchantB, paymentID(t, a.post(t, a.merchantA, testenv.Name(t, "k"), paymentBody).Body))
			},
			wantStatus:  http.StatusNotFound,
			wantProblem: "not-found",
		},
		{
			name:        "404 unknown payment",
			send:        func(t *testing.T) response { return a.get(t, a.merchantA, "pay_doesnotexist") },
			wantStatus:  http.StatusNotFound,
			wantProblem: "not-found",
		},
		{
			name:        "404 unknown route",
			send:        func(t *testing.T) response { return a.do(t, http.MethodGet, "/nope", nil, nil) },
			wantStatus:  http.StatusNotFound,
			wantProblem: "not-found",
		},
		{
			name: "405 wrong method",
			send: func(t *testing.T) response {
				return a.do(t, http.MethodDelete, "/v1/payments", map[string]string{"Authorization": "Bearer " + a.keys[a.merchantA]}, nil)
			},
			wantStatus:  http.StatusMethodNotAllowed,
			wantHeader:  map[string]string{"Allow": "POST"},
			wantProblem: "method-not-allowed",
		},
		{
			name:        "503 Redis unreachable",
			send:        func(t *testing.T) response { return down.post(t, down.merchantA, testenv.Name(t, "k"), paymentBody) },
			wantStatus:  http.StatusServiceUnavailable,
			wantProblem: "unavailable",
		},
		{
			name:       "503 readyz while Redis is unreachable",
			send:       func(t *testing.T) response { return down.opsGet(t, "/readyz") },
			wantStatus: http.StatusServiceUnavailable,
			check: func(t *testing.T, r response) {
				var rep struct {
					Status string
					Checks map[string]struct{ Status string }
				}
				json.Unmarshal(r.Body, &rep)
				if rep.Status != "not_ready" || rep.Checks["redis"].Status != "down" || rep.Checks["postgres"].Status != "up" {
					t.Errorf("readyz body = %s, want not_ready with redis down and postgres up", r.Body)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tt.send(t)
			if r.Status != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", r.Status, tt.wantStatus, r.Body)
			}
			for k, v := range tt.wantHeader {
				if got := r.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if tt.wantProblem != "" {
				if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
					t.Errorf("Content-Type = %q, want application/problem+json", ct)
				}
				p := r.problem(t)
				if p.Type != "urn:oncepay:api:problem:"+tt.wantProblem || p.Status != tt.wantStatus || p.Title == "" {
					t.Errorf("problem = %+v, want type %s and status %d", p, tt.wantProblem, tt.wantStatus)
				}
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}
