package main

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/idem"
)

// TestFingerprintIsOfTheDecodedRequest: the key's fingerprint is that of
// the request the api decoded, not of its bytes. Bodies that decode to the
// same request (other key order, white space, escapes, a null optional
// field) are replays; a body that decodes differently is 422. A body in
// the contract's form keeps the fingerprint of its own bytes.
func TestFingerprintIsOfTheDecodedRequest(t *testing.T) {
	t.Parallel()
	a := startAPI(t, apiOptions{})
	key := testenv.Name(t, "k")
	const body = `{"amount": 700, "currency": "EUR", "customer_id": "cus_7"}`
	first := a.post(t, a.merchantA, key, body)
	if first.Status != http.StatusAccepted {
		t.Fatalf("first request: %d %s", first.Status, first.Body)
	}
	for _, same := range []string{
		`{"customer_id":"cus_7","currency":"EUR","amount":700}`,
		`{"amount": 700, "currency": "EUR", "customer_id": "cus\u005f7", "description": null}`,
	} {
		r := a.post(t, a.merchantA, key, same)
		if r.Status != http.StatusAccepted || !bytes.Equal(r.Body, first.Body) || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("%s: %d %s, want the first answer replayed", same, r.Status, r.Body)
		}
	}
	if r := a.post(t, a.merchantA, key, `{"amount": 700, "currency": "EUR", "customer_id": "cus_7", "description": ""}`); r.Status != http.StatusUnprocessableEntity {
		t.Errorf("another request under the key: %d %s, want 422", r.Status, r.Body)
	}

	k, _ := idem.NewKey(a.merchantA, key)
	want, err := idem.Fingerprint(http.MethodPost, "/v1/payments", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if got := a.rdb.HGet(context.Background(), k.String(), "api:fp").Val(); got != want {
		t.Errorf("api:fp = %q, want %q, the fingerprint of the body's bytes", got, want)
	}
}
