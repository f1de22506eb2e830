package idem

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// canonicalCases are documents whose canonical form the hand-written
// writer must give exactly as encoding/json does (canonicalStd).
var canonicalCases = []string{
	``, ` `, "\t\n", `{}`, `[]`, `""`, `0`, `-0`, `1.50`, `1e3`, `-1E-7`, `true`, `false`, `null`,
	`{"b":1,"a":[1,2,{"d":null,"c":true}]}`,
	` {"a" : "\u00e9"} `,
	`{"<":"&>"}`,
	`{"a":1,"a":2}`, `{"a":1,"b":0,"a":{"x":[]}}`, `{"\u0061":1,"a":2}`, `{"a":2,"\u0061":1}`,
	`{"b":"x","a\u0000":"y","a":"z"}`,
	`"\b\f\n\r\t\"\\\/"`, `"\u0001\u001f\u007f"`, `"\u2028\u2029"`, "\"\u2028\"",
	`"\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\uD83D\uDE00"`,
	"\"\xff\xfe\"", "\"a\xc3\"", "{\"\xff\":1,\"\xfe\":2}", "\"\xed\xa0\x80\"",
	`[[[[{"z":{"y":{"x":1,"w":2}}}]]]]`,
	`{"amount":1250,"currency":"EUR","customer_id":"cus_42"}`,
	"\u00a0", // Unicode white space only: empty, as before
	// invalid: encoding/json's error
	`{"a":`, `{"a":1} {"b":2}`, `nope`, `01`, `[1,]`, `{"a" 1}`, "\"\x01\"", `"\x"`, `1 x`, "\xef\xbb\xbf{}",
}

func TestCanonicalSameAsEncodingJSON(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"b":[1,{"a":`, 300) + `0` + strings.Repeat(`}],"a":2}`, 300)
	for _, in := range append(canonicalCases, deep, strings.Repeat("[", 10001)+strings.Repeat("]", 10001)) {
		want, wantErr := canonicalStd([]byte(in))
		got, err := CanonicalJSON([]byte(in))
		if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Errorf("CanonicalJSON(%q) = %q, %v; encoding/json gives %q, %v", trim(in), got, err, want, wantErr)
		}
	}
}

func trim(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// FuzzCanonicalSame checks the hand-written canonical form against
// encoding/json's, byte for byte, errors included.
func FuzzCanonicalSame(f *testing.F) {
	for _, s := range canonicalCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want, wantErr := canonicalStd(in)
		got, err := CanonicalJSON(in)
		if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) {
			t.Fatalf("CanonicalJSON(%q) = %q, %v; encoding/json gives %q, %v", in, got, err, want, wantErr)
		}
	})
}

// TestFingerprintSameAsBefore: the fingerprint is the SHA-256 of method,
// path and encoding/json's canonical form, as it always was (fingerprints
// are stored, in Redis and in systems of record).
func TestFingerprintSameAsBefore(t *testing.T) {
	t.Parallel()
	for _, in := range canonicalCases {
		canon, wantErr := canonicalStd([]byte(in))
		h := sha256.New()
		h.Write([]byte("POST\n/v1/payments\n"))
		h.Write(canon)
		want := hex.EncodeToString(h.Sum(nil))
		got, err := Fingerprint("POST", "/v1/payments", []byte(in))
		if (err == nil) != (wantErr == nil) || (err == nil && got != want) {
			t.Errorf("Fingerprint(%q) = %s, %v; want %s, %v", in, got, err, want, wantErr)
		}
	}
	// Pinned: what the encoding/json version returned.
	for in, want := range map[string]string{
		`{"amount":1250,"currency":"EUR","customer_id":"cus_42"}`:              "5123d4461fed85a60f6a827a48299193a7b5796071bed6f40e13d76200dd2465",
		"{\"b\":\"\\u2028\\ud83d\",\"a\":[1.0,{\"z\":null,\"\xff\":\"<&>\"}]}": "a3147bcfddee644c880e646bcb3435c5baa6a2d1f2ce75d776bc312ce9225f42",
	} {
		if got, err := Fingerprint("POST", "/v1/payments", []byte(in)); err != nil || got != want {
			t.Errorf("Fingerprint(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
}
