package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/services/psp/internal/charge"
	"github.com/oncepay/oncepay/services/psp/internal/psptest"
)

func TestChargeRejectsBadInput(t *testing.T) {
	t.Parallel()
	s := psptest.Start(t, psptest.Knobs())
	good := chargeBody(1000, "cus_1", "pay_1")
	type in struct{ In, Field string }
	tests := []struct {
		name   string
		header http.Header
		body   string
		status int
		want   []in // field errors, in order: header first, then body fields sorted
	}{
		{"missing key", http.Header{}, good, 400, []in{{"header", "Idempotency-Key"}}},
		{"empty key", http.Header{"Idempotency-Key": {""}}, good, 400, []in{{"header", "Idempotency-Key"}}},
		{"513-char key", http.Header{"Idempotency-Key": {strings.Repeat("k", 513)}}, good, 400, []in{{"header", "Idempotency-Key"}}},
		{"key with a tab (control char)", http.Header{"Idempotency-Key": {"a\tb"}}, good, 400, []in{{"header", "Idempotency-Key"}}},
		{"key with a space", http.Header{"Idempotency-Key": {"a b"}}, good, 400, []in{{"header", "Idempotency-Key"}}},
		{"non-ASCII key", http.Header{"Idempotency-Key": {"clé"}}, good, 400, []in{{"header", "Idempotency-Key"}}},
		{"two keys", http.Header{"Idempotency-Key": {"a", "b"}}, good, 400, []in{{"header", "Idempotency-Key"}}},
		{"malformed JSON", nil, `{"amount":1000,`, 400, []in{{"body", ""}}},
		{"empty body", nil, ``, 400, []in{{"body", ""}}},
		{"not an object", nil, `"charge me"`, 400, []in{{"body", ""}}},
		{"trailing data", nil, good + `{}`, 400, []in{{"body", ""}}},
		{"unknown field", nil, `{"amount":1000,"currency":"EUR","customer_id":"c","reference":"r","capture":true}`, 400, []in{{"body", "capture"}}},
		{"amount 0", nil, chargeBody(0, "c", "r"), 400, []in{{"body", "amount"}}},
		{"negative amount", nil, chargeBody(-5, "c", "r"), 400, []in{{"body", "amount"}}},
		{"fractional amount", nil, `{"amount":10.5,"currency":"EUR","customer_id":"c","reference":"r"}`, 400, []in{{"body", "amount"}}},
		{"amount as string", nil, `{"amount":"10","currency":"EUR","customer_id":"c","reference":"r"}`, 400, []in{{"body", "amount"}}},
		{"lower-case currency", nil, `{"amount":10,"currency":"eur","customer_id":"c","reference":"r"}`, 400, []in{{"body", "currency"}}},
		{"four-letter currency", nil, `{"amount":10,"currency":"EURO","customer_id":"c","reference":"r"}`, 400, []in{{"body", "currency"}}},
		{"missing currency, customer and reference", nil, `{"amount":10}`, 400, []in{{"body", "currency"}, {"body", "customer_id"}, {"body", "reference"}}},
		{"control char in reference", nil, `{"amount":10,"currency":"EUR","customer_id":"c","reference":"r\u0000"}`, 400, []in{{"body", "reference"}}},
		{"everything at once", http.Header{}, `{"amount":0,"currency":"x","customer_id":"c","reference":"r","extra":1}`, 400,
			[]in{{"header", "Idempotency-Key"}, {"body", "extra"}, {"body", "amount"}, {"body", "currency"}}},
		{"not JSON content", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, "amount=10", 415, nil},
		{"too large", nil, `{"reference":"` + strings.Repeat("r", 70<<10) + `"}`, 413, nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.header
			if h == nil {
				h = http.Header{"Idempotency-Key": {"bad-input-" + strings.Repeat("x", i)}}
			}
			if _, ok := h["Content-Type"]; !ok {
				h = h.Clone()
				h.Set("Content-Type", "application/json")
			}
			p := wantProblem(t, send(t, http.MethodPost, s.URL+"/v1/charges", h, tt.body), tt.status)
			var got []in
			for _, e := range p.Errors {
				got = append(got, in{e.In, e.Field})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("field errors (-want +got):\n%s\nproblem: %+v", diff, p)
			}
		})
	}

	sum := readSummary(t, s)
	if sum.Charges != 0 || sum.Calls != int64(len(tests)) || sum.CallsByOutcome[charge.OutcomeInvalid] != int64(len(tests)) {
		t.Errorf("summary = %+v, want %d invalid calls and no charge", sum, len(tests))
	}
	l := readLedger(t, s, "")
	for i, c := range l.Calls {
		if c.ChargeID != nil || c.HTTPStatus == nil || int(*c.HTTPStatus) != tests[i].status {
			t.Errorf("call %d (%s): %+v, want status %d and no charge id", i, tests[i].name, c, tests[i].status)
		}
	}
	// What was valid is kept: the amount-0 call still names its reference.
	if c := l.Calls[12]; deref(c.Reference) != "r" || c.Amount != nil || deref(c.IdempotencyKey) == "" {
		t.Errorf("amount-0 call = %+v, want reference r, no amount, its key", c)
	}
}
