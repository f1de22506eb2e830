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

// Unwrap classifies e: ErrMismatch for 422, ErrTransient for 408, 409, 429
// and 5xx, nothing otherwise.
func (e *Error) Unwrap() error {
	switch s := e.StatusCode; {
	case s == http.StatusUnprocessableEntity:
		return ErrMismatch
	case s == http.StatusRequestTimeout, s == http.StatusConflict, s == http.StatusTooManyRequests, s >= 500:
		return ErrTransient
	}
	return nil
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
