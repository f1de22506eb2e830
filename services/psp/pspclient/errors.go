package pspclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
)

var (
	// ErrTransient is wrapped by every error whose charge outcome is unknown or
	// that may succeed if retried: transport errors (including a connection
	// the psp dropped after charging), timeouts and cancellations, 5xx, 408,
	// 409 and 429. Retry with the same idempotency key.
	ErrTransient = errors.New("psp: transient failure, outcome unknown")

	// ErrMismatch is wrapped when the idempotency key was already used with a
	// different request (422). Retrying will not help.
	ErrMismatch = errors.New("psp: idempotency key reused with a different request")

	// ErrRejected is wrapped when the psp refused the request itself for
	// good: 400 (an invalid request, or a charge it rejects), 413 and 422
	// (ErrMismatch too). The same request will never be charged; the
	// Error's problem says why. Other 4xx (401, 403, 404, 415...) point at
	// the caller's setup, not the request, and wrap neither sentinel.
	ErrRejected = errors.New("psp: request rejected for good")
)

// Error is an error answer from the psp (an RFC 9457 problem). Use errors.As
// to read it; errors.Is(err, ErrTransient) and errors.Is(err, ErrMismatch)
// classify it by status.
type Error struct {
	StatusCode int          `json:"status"`
	Type       string       `json:"type"`
	Title      string       `json:"title"`
	Detail     string       `json:"detail"`
	Errors     []FieldError `json:"errors"`
	RequestID  string       `json:"request_id"`
}

// FieldError is one invalid input reported in an Error.
type FieldError struct {
	Field  string `json:"field"`  // JSON field or header name; "" for the body as a whole
	In     string `json:"in"`     // "body" or "header"
	Detail string `json:"detail"` // what is wrong
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "psp answered %d", e.StatusCode)
	if e.Title != "" {
		fmt.Fprintf(&b, " %s", e.Title)
	}
	if e.Detail != "" {
		fmt.Fprintf(&b, ": %s", e.Detail)
	}
	for _, f := range e.Errors {
		fmt.Fprintf(&b, "; %s %s", strings.TrimSpace(f.In+" "+f.Field), f.Detail)
	}
	return b.String()
}

// Unwrap classifies e: ErrMismatch and ErrRejected for 422, ErrRejected
// for 400 and 413, ErrTransient for 408, 409, 429 and 5xx, nothing
// otherwise.
func (e *Error) Unwrap() []error {
	switch s := e.StatusCode; {
	case s == http.StatusUnprocessableEntity:
		return []error{ErrMismatch, ErrRejected}
	case s == http.StatusBadRequest, s == http.StatusRequestEntityTooLarge:
		return []error{ErrRejected}
	case s == http.StatusRequestTimeout, s == http.StatusConflict, s == http.StatusTooManyRequests, s >= 500:
		return []error{ErrTransient}
	}
	return nil
}

// Reason is why the psp refused the request, in a few words: the problem
// type's last segment, then the field errors or else the detail, e.g.
// "invalid-request: customer_id must be at most 255 characters".
func (e *Error) Reason() string {
	code := e.Type
	if i := strings.LastIndexByte(code, ':'); i >= 0 {
		code = code[i+1:]
	}
	if code == "" || code == "about:blank" || code == "blank" {
		code = fmt.Sprintf("http-%d", e.StatusCode)
	}
	var why []string
	for _, f := range e.Errors {
		why = append(why, strings.TrimSpace(f.Field+" "+f.Detail))
	}
	if len(why) == 0 && e.Detail != "" {
		why = append(why, e.Detail)
	}
	if len(why) == 0 {
		return code
	}
	return code + ": " + strings.Join(why, "; ")
}

// problemOf builds the *Error for a non-success answer, from its problem
// body when there is one.
func problemOf(resp *http.Response, body []byte) *Error {
	e := &Error{}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); strings.HasSuffix(mt, "json") {
		_ = json.Unmarshal(body, e) // best effort: a proxy may answer anything
	}
	e.StatusCode = resp.StatusCode
	if e.Title == "" {
		e.Title = http.StatusText(resp.StatusCode)
	}
	return e
}

// transient marks err as ErrTransient, keeping err in the chain.
func transient(err error) error {
	return fmt.Errorf("%w: %w", ErrTransient, err)
}
