package idemhttp_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemhttp"
)

// TestHandlerReadsTheWholeBody: whatever the fingerprint read of the body,
// the handler reads all of it.
func TestHandlerReadsTheWholeBody(t *testing.T) {
	t.Parallel()
	const body = `{"amount":1250,"currency":"EUR","customer_id":"cus_42"}`
	readN := func(n int64) func(r *http.Request) (string, error) {
		return func(r *http.Request) (string, error) {
			b, err := io.ReadAll(io.LimitReader(r.Body, n))
			return string(b), err
		}
	}
	tests := []struct {
		name        string
		fingerprint func(r *http.Request) (string, error)
		length      int64 // the declared ContentLength
	}{
		{name: "default, length declared", length: int64(len(body))},
		{name: "default, length unknown", length: -1},
		{name: "reads a part", fingerprint: readN(7), length: int64(len(body))},
		{name: "reads all", fingerprint: readN(1 << 20), length: -1},
		{name: "reads nothing", fingerprint: readN(0), length: int64(len(body))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []byte
			h := idemhttp.New(idemhttp.Config{Boundary: memBoundary{}, Fingerprint: tt.fingerprint})(
				http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					got, _ = io.ReadAll(r.Body)
					w.WriteHeader(http.StatusCreated)
				}))
			r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(body))
			r.ContentLength = tt.length
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Idempotency-Key", "k1")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusCreated || string(got) != body {
				t.Errorf("status %d, the handler read %q; want 201 and %q", w.Code, got, body)
			}
		})
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	const body = `{"b":2, "a":1}`
	canonical, err := idem.Fingerprint(http.MethodPost, "/orders", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("x"), idemhttp.MaxBody)
	tests := []struct {
		name        string
		contentType string
		body        []byte
		declared    bool // ContentLength set, else -1
		want        string
		wantTooBig  bool
	}{
		{name: "json", contentType: "application/json", body: []byte(body), declared: true, want: canonical},
		{name: "json, length unknown", contentType: "application/json", body: []byte(body), want: canonical},
		{name: "json in capitals", contentType: "Application/JSON", body: []byte(body), declared: true, want: canonical},
		{name: "json with spaces", contentType: " application/json ", body: []byte(body), want: canonical},
		{name: "json with charset", contentType: "application/json; charset=utf-8", body: []byte(body), want: canonical},
		{name: "json with a bad parameter", contentType: "application/json; charset", body: []byte(body), want: canonical},
		{name: "text", contentType: "text/plain", body: []byte(body), declared: true, want: "raw"},
		{name: "json-like type", contentType: "application/jsonx", body: []byte(body), want: "raw"},
		{name: "no type", body: []byte(body), want: "raw"},
		{name: "MaxBody bytes", contentType: "text/plain", body: big, declared: true, want: "raw"},
		{name: "MaxBody bytes, length unknown", contentType: "text/plain", body: big, want: "raw"},
		{name: "one byte over", contentType: "text/plain", body: append(big, 'x'), declared: true, wantTooBig: true},
		{name: "one byte over, length unknown", contentType: "text/plain", body: append(big, 'x'), wantTooBig: true},
		{name: "over, length declared short", contentType: "text/plain", body: append(big, 'x'), declared: true, wantTooBig: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodPost, "/orders", bytes.NewReader(tt.body))
			r.ContentLength = -1
			if tt.declared {
				r.ContentLength = int64(len(tt.body))
			}
			if tt.name == "over, length declared short" {
				r.ContentLength = 10
			}
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			got, err := idemhttp.Fingerprint(r)
			var tooBig *http.MaxBytesError
			if tt.wantTooBig {
				if !errors.As(err, &tooBig) || tooBig.Limit != idemhttp.MaxBody {
					t.Errorf("Fingerprint() = %q, %v; want an *http.MaxBytesError of %d", got, err, idemhttp.MaxBody)
				}
				return
			}
			if err != nil {
				t.Fatalf("Fingerprint() error %v", err)
			}
			if tt.want == "raw" {
				if got == canonical || len(got) != 64 {
					t.Errorf("Fingerprint() = %q, want the SHA-256 of the raw bytes", got)
				}
				return
			}
			if got != tt.want {
				t.Errorf("Fingerprint() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestDeclaredLengthIsNotTrusted: a body that declares a megabyte and
// sends a few bytes costs no megabyte: the buffer grows with the bytes that
// arrive, past a bounded first guess.
func TestDeclaredLengthIsNotTrusted(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"a":1}`))
	r.ContentLength = idemhttp.MaxBody
	r.Header.Set("Content-Type", "application/json")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := idemhttp.Fingerprint(r); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 256<<10 {
		t.Errorf("fingerprinting 7 bytes that declared %d allocated %d bytes, want at most 256 KiB", idemhttp.MaxBody, got)
	}
}
