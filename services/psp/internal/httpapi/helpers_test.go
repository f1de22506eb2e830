package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oncepay/oncepay/services/psp/internal/ledger"
	"github.com/oncepay/oncepay/services/psp/internal/psptest"
)

// answer is an HTTP answer, body read.
type answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// problemBody is the shape of an application/problem+json answer.
type problemBody struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Errors []struct {
		Field  string `json:"field"`
		In     string `json:"in"`
		Detail string `json:"detail"`
	} `json:"errors"`
	RequestID string `json:"request_id"`
}

// trySend sends one request. The body has no GetBody, so net/http never
// resends it by itself after a dropped connection.
func trySend(ctx context.Context, method, url string, header http.Header, body string) (answer, error) {
	var rd io.Reader
	if body != "" {
		rd = io.NopCloser(strings.NewReader(body))
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return answer{}, err
	}
	req.ContentLength = int64(len(body))
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	return answer{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

func send(t *testing.T, method, url string, header http.Header, body string) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	a, err := trySend(ctx, method, url, header, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return a
}

// sendAdmin sends a request to path on s's admin listener, with its token.
func sendAdmin(t *testing.T, s *psptest.Server, method, path string, header http.Header, body string) answer {
	t.Helper()
	h := header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Authorization", "Bearer "+s.AdminToken)
	return send(t, method, s.AdminURL+path, h, body)
}

// postCharge posts body to /v1/charges with the key as Idempotency-Key.
func postCharge(t *testing.T, s *psptest.Server, key, body string) answer {
	t.Helper()
	return send(t, http.MethodPost, s.URL+"/v1/charges", chargeHeader(key), body)
}

func chargeHeader(key string) http.Header {
	return http.Header{"Idempotency-Key": {key}, "Content-Type": {"application/json"}}
}

func chargeBody(amount int64, customer, reference string) string {
	return fmt.Sprintf(`{"amount":%d,"currency":"EUR","customer_id":%q,"reference":%q}`, amount, customer, reference)
}

func decodeJSON[T any](t *testing.T, a answer) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(a.Body, &v); err != nil {
		t.Fatalf("decode %T from %d %s: %v", v, a.Status, a.Body, err)
	}
	return v
}

// wantProblem checks that a is a problem+json answer with status and returns it.
func wantProblem(t *testing.T, a answer, status int) problemBody {
	t.Helper()
	if a.Status != status {
		t.Fatalf("status = %d, want %d; body %s", a.Status, status, a.Body)
	}
	if ct := a.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q, want application/problem+json", ct)
	}
	p := decodeJSON[problemBody](t, a)
	if p.Status != status || p.Type == "" || p.Title == "" || p.RequestID == "" {
		t.Errorf("problem = %+v, want status %d, type, title and request_id", p, status)
	}
	return p
}

func readLedger(t *testing.T, s *psptest.Server, reference string) ledger.Ledger {
	t.Helper()
	path := "/admin/ledger"
	if reference != "" {
		path += "?reference=" + reference
	}
	a := sendAdmin(t, s, http.MethodGet, path, nil, "")
	if a.Status != http.StatusOK {
		t.Fatalf("GET /admin/ledger = %d %s", a.Status, a.Body)
	}
	return decodeJSON[ledger.Ledger](t, a)
}

func readSummary(t *testing.T, s *psptest.Server) ledger.Summary {
	t.Helper()
	a := sendAdmin(t, s, http.MethodGet, "/admin/ledger/summary", nil, "")
	if a.Status != http.StatusOK {
		t.Fatalf("GET /admin/ledger/summary = %d %s", a.Status, a.Body)
	}
	return decodeJSON[ledger.Summary](t, a)
}

// outcomes lists the outcomes of calls, in order.
func outcomes(calls []ledger.Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, string(c.Outcome))
	}
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
