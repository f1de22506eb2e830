package idem

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestFingerprint(t *testing.T) {
	t.Parallel()
	base := `{"amount":1000,"currency":"EUR","customer_id":"c1","description":"tea"}`
	same := []string{
		`{"currency":"EUR","amount":1000,"description":"tea","customer_id":"c1"}`,
		"{\n  \"amount\": 1000,\n  \"currency\": \"EUR\",\n  \"customer_id\": \"c1\",\n  \"description\": \"tea\"\n}\n",
		`{"amount":1000,"currency":"\u0045UR","customer_id":"c1","description":"tea"}`,
	}
	different := []string{
		`{"amount":1001,"currency":"EUR","customer_id":"c1","description":"tea"}`,
		`{"amount":1000,"currency":"USD","customer_id":"c1","description":"tea"}`,
		`{"amount":1000,"currency":"EUR","customer_id":"c1"}`,
		`{"amount":"1000","currency":"EUR","customer_id":"c1","description":"tea"}`,
		`{"amount":1000.0,"currency":"EUR","customer_id":"c1","description":"tea"}`,
	}
	want, err := Fingerprint("POST", "/v1/payments", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range same {
		if got, _ := Fingerprint("POST", "/v1/payments", []byte(s)); got != want {
			t.Errorf("Fingerprint(%s) differs from the canonical equivalent", s)
		}
	}
	for _, s := range different {
		if got, _ := Fingerprint("POST", "/v1/payments", []byte(s)); got == want {
			t.Errorf("Fingerprint(%s) equals the fingerprint of a different payload", s)
		}
	}
	if got, _ := Fingerprint("PUT", "/v1/payments", []byte(base)); got == want {
		t.Error("method does not change the fingerprint")
	}
	if got, _ := Fingerprint("POST", "/v1/refunds", []byte(base)); got == want {
		t.Error("path does not change the fingerprint")
	}
	for _, bad := range []string{`{"a":`, `{"a":1} {"b":2}`, `nope`} {
		if _, err := Fingerprint("POST", "/", []byte(bad)); err == nil {
			t.Errorf("Fingerprint(%q) accepted invalid JSON", bad)
		}
	}
	if _, err := Fingerprint("POST", "/", nil); err != nil {
		t.Errorf("empty body: %v", err)
	}
}

// FuzzCanonicalJSON checks that canonicalisation is idempotent, yields valid
// JSON, and ignores re-indentation.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1,2,{"d":null,"c":true}]}`, `"x"`, `1e3`, `[]`, `{"<":"&"}`, ` {"a" : "\u00e9"} `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c1, err := CanonicalJSON(in)
		if err != nil {
			return
		}
		if len(c1) > 0 && !json.Valid(c1) {
			t.Fatalf("canonical form of %q is not JSON: %q", in, c1)
		}
		c2, err := CanonicalJSON(c1)
		if err != nil || !bytes.Equal(c1, c2) {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", in, c1, c2, err)
		}
		var indented bytes.Buffer
		if json.Indent(&indented, in, "", "  ") == nil {
			c3, err := CanonicalJSON(indented.Bytes())
			if err != nil || !bytes.Equal(c1, c3) {
				t.Fatalf("indentation changed the canonical form: %q vs %q (%v)", c1, c3, err)
			}
		}
	})
}
