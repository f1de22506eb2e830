package httpapi

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/oncepay/oncepay/pkg/idem"
)

func decodeBody(t *testing.T, body string) (createPaymentRequest, error) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/v1/payments", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	var req createPaymentRequest
	err := decodeJSON(httptest.NewRecorder(), r, &req)
	return req, err
}

// TestDecodeJSONRejectsWhatTheDecoderWouldGuess: names are matched
// exactly, and a name given twice is an error, where encoding/json would
// match case-insensitively and keep the last value.
func TestDecodeJSONRejectsWhatTheDecoderWouldGuess(t *testing.T) {
	t.Parallel()
	const rest = `"currency": "EUR", "customer_id": "c"`
	tests := []struct {
		name string
		body string
		want []fieldError
	}{
		{"upper-case name", `{"AMOUNT": 100, ` + rest + `}`,
			[]fieldError{{"AMOUNT", "unknown field (field names are case-sensitive: amount)"}}},
		{"two spellings of one field", `{"amount": 100, "Amount": 200, ` + rest + `}`,
			[]fieldError{{"Amount", "unknown field (field names are case-sensitive: amount)"}}},
		{"the same, the other way round", `{"Amount": 200, "amount": 100, ` + rest + `}`,
			[]fieldError{{"Amount", "unknown field (field names are case-sensitive: amount)"}}},
		{"a field twice", `{"amount": 100, "amount": 200, ` + rest + `}`,
			[]fieldError{{"amount", "given more than once"}}},
		{"every problem listed", `{"amount": 1, "tip": {"x": 1}, "Currency": "EUR", "currency": "EUR", "currency": "USD", "customer_id": "c"}`,
			[]fieldError{{"tip", "unknown field"}, {"Currency", "unknown field (field names are case-sensitive: currency)"},
				{"currency", "given more than once"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := decodeBody(t, tt.body)
			var p *problem
			if !errors.As(err, &p) || p.Status != http.StatusBadRequest {
				t.Fatalf("decodeJSON(%s) = %v, want a 400 problem", tt.body, err)
			}
			if diff := cmp.Diff(tt.want, p.Errors); diff != "" {
				t.Errorf("field errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFingerprintIsOfTheDecodedRequest: bodies that decode to the same
// request have one canonical form, bodies that decode differently do not,
// and a body in the contract's form keeps the fingerprint of its own bytes.
func TestFingerprintIsOfTheDecodedRequest(t *testing.T) {
	t.Parallel()
	const body = `{"amount": 1250, "currency": "EUR", "customer_id": "cus_42", "description": "order 42"}`
	canonical := func(body string) []byte {
		t.Helper()
		req, err := decodeBody(t, body)
		if err != nil {
			t.Fatalf("decodeJSON(%s): %v", body, err)
		}
		c, err := req.canonical()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	want := canonical(body)
	for _, same := range []string{
		`{"description":"order 42","customer_id":"cus_42","currency":"EUR","amount":1250}`,
		"{\n  \"amount\": 1250,\n  \"currency\": \"EUR\",\n  \"customer_id\": \"cus\\u005f42\",\n  \"description\": \"order 42\"\n}",
	} {
		if got := canonical(same); !bytes.Equal(got, want) {
			t.Errorf("canonical(%s) = %s, want %s", same, got, want)
		}
	}
	if a, b := canonical(`{"amount": 1, "currency": "EUR", "customer_id": "c"}`),
		canonical(`{"amount": 1, "currency": "EUR", "customer_id": "c", "description": null}`); !bytes.Equal(a, b) {
		t.Errorf("description absent %s and null %s decode alike but differ", a, b)
	}
	for _, other := range []string{
		`{"amount": 1251, "currency": "EUR", "customer_id": "cus_42", "description": "order 42"}`,
		`{"amount": 1250, "currency": "EUR", "customer_id": "cus_42", "description": ""}`,
		`{"amount": 1250, "currency": "EUR", "customer_id": "cus_42"}`,
	} {
		if got := canonical(other); bytes.Equal(got, want) {
			t.Errorf("canonical(%s) = %s, the same as another request's", other, got)
		}
	}
	for _, body := range []string{body, `{"amount": 7, "currency": "USD", "customer_id": "<c&d>", "description": "ünï \"q\" \u2028"}`} {
		raw, err := idem.CanonicalJSON([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if got := canonical(body); !bytes.Equal(got, raw) {
			t.Errorf("canonical(%s) = %s, want the body's own canonical JSON %s (fingerprints of existing payments)", body, got, raw)
		}
	}
}

// BenchmarkDecodeJSON measures decoding a typical body, and the share of
// it that the field-name scan takes.
func BenchmarkDecodeJSON(b *testing.B) {
	const body = `{"amount": 1250, "currency": "EUR", "customer_id": "cus_42", "description": "order 42"}`
	b.Run("decodeJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := httptest.NewRequest(http.MethodPost, "/v1/payments", strings.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			var req createPaymentRequest
			if err := decodeJSON(httptest.NewRecorder(), r, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fieldNameErrors", func(b *testing.B) {
		b.ReportAllocs()
		names := jsonNames(&createPaymentRequest{})
		for b.Loop() {
			if errs := fieldNameErrors([]byte(body), names); errs != nil {
				b.Fatal(errs)
			}
		}
	})
	b.Run("fingerprint", func(b *testing.B) {
		b.ReportAllocs()
		amount, cur, cus, desc := int64(1250), "EUR", "cus_42", "order 42"
		req := createPaymentRequest{Amount: &amount, Currency: &cur, CustomerID: &cus, Description: &desc}
		for b.Loop() {
			c, err := req.canonical()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := idem.Fingerprint(http.MethodPost, "/v1/payments", c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
