package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

// FuzzCreatePayment drives POST /v1/payments of a real api (run on port 0,
// the real boundary on the harness Redis, the real Postgres) with random
// Authorization, Idempotency-Key and Content-Type headers and random
// bodies, and checks, for every input:
//
//  1. never a 5xx;
//  2. a 4xx leaves no payment row and no boundary record behind (the
//     merchants' rows and keys are counted before and after);
//  3. a 202 is replayed for the same bytes, and for another encoding of
//     the same decoded request (other key order, white space, escapes):
//     the fingerprint is of the decoded request, so never a 422.
//
// who picks the Authorization header: 0 merchant A's key, 1 merchant B's,
// anything else auth as it is (no header when empty). An empty key or
// content type sends no header. Inputs that net/http cannot send (a
// control character in a header) are skipped.
//
// make test runs it for a bounded time (make fuzz-api); plain go test runs
// the seed corpus in testdata/fuzz/FuzzCreatePayment and the seeds below.
func FuzzCreatePayment(f *testing.F) {
	for _, s := range []struct {
		who                    uint8
		auth, key, ctype, body string
	}{
		{0, "", "order-1", "application/json", paymentBody},
		{1, "", "order-1", "application/json; charset=utf-8", `{"customer_id":"c","currency":"EUR","amount":1}`},
		{0, "", `"sf-key"`, "application/json", `{"amount":5,"currency":"EUR","customer_id":"c\u005f1","description":null}`},
		{0, "", "k", "application/json", `{"amount": 100, "currency": "EUR", "customer_id": "c", "amount": 200}`},
		{0, "", "k", "text/plain", paymentBody},
		{0, "", "", "application/json", paymentBody},
		{0, "", "bad key", "application/json", paymentBody},
		{2, "Bearer nope", "k2", "application/json", paymentBody},
		{2, "", "k3", "application/json", paymentBody},
		{0, "", "k4", "application/json", `{"amount": 1e2, "currency": "EUR", "customer_id": "c"}`},
		{0, "", "k5", "application/json", `{"amount": 12.5, "currency": "EUR", "customer_id": "c"}`},
		{0, "", "k6", "application/json", "{\"amount\": 1, \"currency\": \"EUR\", \"customer_id\": \"\xff\"}"},
		{0, "", "k7", "application/json", `[]`},
	} {
		f.Add(s.who, s.auth, s.key, s.ctype, []byte(s.body))
	}
	a := startAPI(f, apiOptions{})

	f.Fuzz(func(t *testing.T, who uint8, auth, key, ctype string, body []byte) {
		header := map[string]string{}
		switch who {
		case 0:
			header["Authorization"] = "Bearer " + a.keys[a.merchantA]
		case 1:
			header["Authorization"] = "Bearer " + a.keys[a.merchantB]
		default:
			header["Authorization"] = auth
		}
		header["Idempotency-Key"] = key
		header["Content-Type"] = ctype
		for k, v := range header {
			if v == "" {
				delete(header, k)
			} else if !sendable(v) {
				t.Skipf("%s %q: net/http does not send it", k, v)
			}
		}

		rows, keys := a.consumed(t)
		first := a.do(t, http.MethodPost, "/v1/payments", header, body)
		if first.Status >= 500 {
			t.Fatalf("%d %s", first.Status, first.Body)
		}
		if first.Status >= 400 {
			if r, k := a.consumed(t); r != rows || k != keys {
				t.Fatalf("%d %s: payments %d -> %d, boundary records %d -> %d; a 4xx must consume nothing",
					first.Status, first.Body, rows, r, keys, k)
			}
			return
		}
		if first.Status != http.StatusAccepted {
			t.Fatalf("%d %s, want 202 or a 4xx", first.Status, first.Body)
		}
		variants := [][]byte{body}
		if other, ok := reencode(body); ok {
			variants = append(variants, other)
		}
		for _, v := range variants {
			again := a.do(t, http.MethodPost, "/v1/payments", header, v)
			if again.Status != http.StatusAccepted || !bytes.Equal(again.Body, first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("first %q: %d %s\nthen %q: %d %s replayed=%q\nwant the first answer replayed",
					body, first.Status, first.Body, v, again.Status, again.Body, again.Header.Get("Idempotent-Replayed"))
			}
		}
	})
}

// consumed counts the payment rows and the boundary records of both
// merchants.
func (a *api) consumed(t testing.TB) (rows, keys int) {
	t.Helper()
	rows = a.count(t, `SELECT count(*) FROM payments WHERE merchant_id IN ($1, $2)`, a.merchantA, a.merchantB)
	return rows, len(a.redisKeys(t, a.merchantA)) + len(a.redisKeys(t, a.merchantB))
}

// sendable reports whether net/http sends v as a header value: no control
// character but tab.
func sendable(v string) bool {
	for i := range len(v) {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// reencode returns another encoding of the JSON object in body that
// decodes to the same values: keys sorted, indented, numbers kept as
// written. ok is false when body is not one JSON object with distinct
// keys (the api refuses those anyway, so the first answer is no 202).
func reencode(body []byte) (_ []byte, ok bool) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil || d.More() {
		return nil, false
	}
	b, err := json.MarshalIndent(m, " ", "\t")
	if err != nil {
		return nil, false
	}
	return b, true
}
