package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of a payment request, documented in docs/api.md. Every request
// they accept must be one the psp accepts as the worker forwards it (its
// limits are in characters too: 255 for customer_id), or the payment could
// never be charged: TestEveryAcceptedPaymentIsAcceptedByThePSP checks it.
const (
	// MaxAmount is the largest amount accepted, in minor units
	// (1,000,000.00 in a two-decimal currency).
	MaxAmount         = 100_000_000
	maxCustomerIDLen  = 64  // characters
	maxDescriptionLen = 255 // characters
)

// currencies is the allow-list of ISO 4217 codes.
var currencies = []string{"AUD", "CAD", "CHF", "CZK", "DKK", "EUR", "GBP", "JPY", "NOK", "PLN", "SEK", "USD"}

// createPaymentRequest is the body of POST /v1/payments. Pointers tell a
// missing field from a zero value. Its fields are in the order of their
// JSON names, and omitempty leaves out the ones not given, so that
// canonical encodes it with sorted keys.
type createPaymentRequest struct {
	Amount      *int64  `json:"amount,omitempty"`
	Currency    *string `json:"currency,omitempty"`
	CustomerID  *string `json:"customer_id,omitempty"`
	Description *string `json:"description,omitempty"`
}

// canonical returns the request as decoded, in canonical JSON: the fields
// that are set (null is not set), keys sorted, no white space. It is what
// the idempotency fingerprint is computed from, so two bodies that decode
// to the same request have the same fingerprint and two that decode
// differently do not, however their bytes are spelled. For a body already
// in the contract's form (exact names, no duplicates, no null) it is the
// body's own canonical JSON, so the fingerprint is the one
// idem.Fingerprint computes from the body itself.
func (req createPaymentRequest) canonical() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as idem.CanonicalJSON
	if err := enc.Encode(req); err != nil {
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// validate returns every problem of the request, in field order; none means
// the request is valid and every required pointer is set.
func (req createPaymentRequest) validate() []fieldError {
	var errs []fieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, fieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	switch {
	case req.Amount == nil:
		add("amount", "is required")
	case *req.Amount <= 0:
		add("amount", "must be greater than 0 (minor units)")
	case *req.Amount > MaxAmount:
		add("amount", "must be at most %d (minor units)", MaxAmount)
	}
	switch {
	case req.Currency == nil:
		add("currency", "is required")
	case !slices.Contains(currencies, *req.Currency):
		add("currency", "must be one of %s", strings.Join(currencies, ", "))
	}
	switch {
	case req.CustomerID == nil:
		add("customer_id", "is required")
	case !text(*req.CustomerID, 1, maxCustomerIDLen):
		add("customer_id", "must be 1-%d characters without control characters", maxCustomerIDLen)
	}
	if req.Description != nil && !text(*req.Description, 0, maxDescriptionLen) {
		add("description", "must be at most %d characters without control characters", maxDescriptionLen)
	}
	return errs
}

// text reports whether s has min..max characters and no control characters.
func text(s string, min, max int) bool {
	n := utf8.RuneCountInString(s)
	return n >= min && n <= max && !strings.ContainsFunc(s, unicode.IsControl)
}
