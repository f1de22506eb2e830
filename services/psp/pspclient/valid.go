package pspclient

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxTextLen is the longest customer_id or reference the psp accepts, in
// characters (Unicode code points), as providers count them.
const MaxTextLen = 255

// Valid returns one problem per field of r that the psp rejects with 400,
// keyed by its JSON name; empty when the psp accepts r. The psp runs this
// very check, so a caller can test what it will send.
func (r ChargeRequest) Valid() map[string]string {
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
