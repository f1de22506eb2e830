package charge

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxTextLen is the longest customer_id or reference accepted, in
// characters (Unicode code points), as providers count them.
const MaxTextLen = 255

// Request is the body of POST /v1/charges.
type Request struct {
	Amount     int64  `json:"amount"`      // minor units, > 0
	Currency   string `json:"currency"`    // ISO 4217 style: three upper-case letters
	CustomerID string `json:"customer_id"` // 1..255 characters, no control characters
	Reference  string `json:"reference"`   // the caller's payment id; 1..255 characters, no control characters
}

// Valid returns one problem per invalid field, keyed by the JSON field name;
// an empty map means r is valid.
func (r Request) Valid() map[string]string {
	problems := make(map[string]string)
	if r.Amount <= 0 {
		problems["amount"] = "must be a positive integer amount in minor units"
	}
	if !validCurrency(r.Currency) {
		problems["currency"] = "must be three upper-case letters, e.g. EUR"
	}
	if msg := textProblem(r.CustomerID); msg != "" {
		problems["customer_id"] = msg
	}
	if msg := textProblem(r.Reference); msg != "" {
		problems["reference"] = msg
	}
	return problems
}

// Fingerprint identifies the payload for idempotency: two requests with the
// same key and the same fingerprint are the same charge; a different
// fingerprint under one key is a mismatch.
func (r Request) Fingerprint() []byte {
	// encoding/json writes struct fields in declaration order, so this is canonical.
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("charge: marshal request: %v", err)) // cannot happen: only strings and ints
	}
	sum := sha256.Sum256(b)
	return sum[:]
}

func validCurrency(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := range len(s) {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

func textProblem(s string) string {
	switch {
	case s == "":
		return "is required"
	case !utf8.ValidString(s):
		return "must be valid UTF-8"
	case utf8.RuneCountInString(s) > MaxTextLen:
		return fmt.Sprintf("must be at most %d characters", MaxTextLen)
	}
	for _, c := range s {
		if unicode.IsControl(c) {
			return "must not contain control characters"
		}
	}
	return ""
}
