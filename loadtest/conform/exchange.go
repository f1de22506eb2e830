package conform

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Exchange is one request and its answer, as evidence. Credentials are
// never kept: Authorization, Cookie and API-key-like headers are redacted.
type Exchange struct {
	Method     string            `json:"method"`
	URL        string            `json:"url"`
	ReqHeader  map[string]string `json:"request_header,omitempty"`
	ReqBody    string            `json:"request_body,omitempty"`
	Credential string            `json:"credential,omitempty"` // "a" or "b"
	Status     int               `json:"status"`               // 0: no answer
	Header     http.Header       `json:"header,omitempty"`
	Body       []byte            `json:"-"`
	BodyText   string            `json:"body,omitempty"` // the first 2 KiB
	Err        string            `json:"error,omitempty"`
	Start      time.Time         `json:"start"`
	End        time.Time         `json:"end"`
}

// request is one request to send.
type request struct {
	method, url string
	cred        string      // "a" (Header) or "b" (OtherHeader)
	key         *string     // nil: no key header
	keys        []string    // several key header fields (nil: use key)
	payload     string      // "a", "b" or "" for no body
	extra       http.Header // added fields (FailHeader)
}

// do sends r and returns the exchange; transport errors are in Err.
func (t Target) do(ctx context.Context, r request) Exchange {
	var body io.Reader
	bodyText := ""
	if r.payload != "" {
		bodyText = t.body(r.payload)
		body = strings.NewReader(bodyText)
	}
	ex := Exchange{Method: r.method, URL: r.url, ReqBody: bodyText, Credential: r.cred, Start: time.Now()}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, body)
	if err != nil {
		ex.Err, ex.End = err.Error(), time.Now()
		return ex
	}
	for k, vs := range t.Header {
		req.Header[k] = vs
	}
	if r.cred == "b" {
		for k, vs := range t.OtherHeader {
			req.Header[http.CanonicalHeaderKey(k)] = vs
		}
	}
	for k, vs := range r.extra {
		req.Header[http.CanonicalHeaderKey(k)] = vs
	}
	switch {
	case r.keys != nil:
		req.Header[http.CanonicalHeaderKey(t.KeyHeader)] = r.keys
	case r.key != nil:
		req.Header[http.CanonicalHeaderKey(t.KeyHeader)] = []string{*r.key}
	}
	ex.ReqHeader = redact(req.Header)
	resp, err := t.Client.Do(req)
	if err != nil {
		ex.Err, ex.End = err.Error(), time.Now()
		return ex
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	ex.End = time.Now()
	if err != nil {
		ex.Err = err.Error()
		return ex
	}
	ex.Status, ex.Header, ex.Body = resp.StatusCode, resp.Header, b
	ex.BodyText = string(b)
	if len(ex.BodyText) > 2048 {
		ex.BodyText = ex.BodyText[:2048] + "…"
	}
	return ex
}

// redact flattens h, hiding credentials.
func redact(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, vs := range h {
		v := strings.Join(vs, ", ")
		lk := strings.ToLower(k)
		if lk == "authorization" || lk == "cookie" || lk == "proxy-authorization" ||
			strings.Contains(lk, "api-key") || strings.Contains(lk, "apikey") || strings.Contains(lk, "token") || strings.Contains(lk, "secret") {
			v = "<redacted>"
		}
		out[k] = v
	}
	return out
}

// String is the exchange in one line: "POST url [key] -> 202 (12ms)".
func (e Exchange) String() string {
	keys := make([]string, 0, len(e.ReqHeader))
	for k := range e.ReqHeader {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(e.Method + " " + e.URL)
	if e.Credential == "b" {
		b.WriteString(" (credential b)")
	}
	if v, ok := e.ReqHeader["Idempotency-Key"]; ok {
		b.WriteString(" Idempotency-Key: " + quoteShort(v))
	}
	b.WriteString(" -> ")
	if e.Status == 0 {
		b.WriteString("no answer: " + e.Err)
	} else {
		b.WriteString(http.StatusText(e.Status))
		b.WriteString(" " + strconv.Itoa(e.Status))
		if ct := e.Header.Get("Content-Type"); ct != "" {
			b.WriteString(" [" + ct + "]")
		}
	}
	b.WriteString(" (" + e.End.Sub(e.Start).Round(time.Millisecond).String() + ")")
	return b.String()
}

func quoteShort(s string) string {
	if len(s) > 48 {
		s = s[:45] + "…"
	}
	return "«" + s + "»"
}

// newKey returns a fresh key: conform-<label>-<random>, 40 characters at most.
func newKey(label string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	if len(label) > 16 {
		label = label[:16]
	}
	return "conform-" + label + "-" + hex.EncodeToString(b[:])
}

// fingerprint is the hex SHA-256 of a body, short.
func fingerprint(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:8])
}

func is2xx(s int) bool { return s >= 200 && s < 300 }
