package charge

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"
)

// Status of a charge as answered to the caller.
const (
	StatusSucceeded = "succeeded"
	StatusDeclined  = "declined"
)

// Decline codes.
const (
	DeclineCardDeclined      = "card_declined"      // customer_id starts with "decline"
	DeclineInsufficientFunds = "insufficient_funds" // amount is exactly 402
)

// Charge is the processor's answer to a valid request: an effective charge
// when Status is StatusSucceeded, a recorded refusal when StatusDeclined.
type Charge struct {
	ID          string    `json:"id"`
	Status      string    `json:"status"`
	DeclineCode string    `json:"decline_code,omitempty"`
	Amount      int64     `json:"amount"`
	Currency    string    `json:"currency"`
	CustomerID  string    `json:"customer_id"`
	Reference   string    `json:"reference"`
	CreatedAt   time.Time `json:"created_at"`
}

// Effective reports whether c moves money (and so belongs in the charges ledger).
func (c Charge) Effective() bool { return c.Status == StatusSucceeded }

// New applies the decline rules to r and returns the resulting charge with a
// fresh id, created now (UTC, truncated to the microsecond so that it
// survives a round trip through Postgres unchanged).
//
// Decline rules, first match wins: a customer_id starting with "decline" is
// declined with card_declined; an amount of exactly 402 is declined with
// insufficient_funds; everything else succeeds.
func New(r Request, now time.Time) Charge {
	c := Charge{
		ID:         NewID(),
		Status:     StatusSucceeded,
		Amount:     r.Amount,
		Currency:   r.Currency,
		CustomerID: r.CustomerID,
		Reference:  r.Reference,
		CreatedAt:  now.UTC().Truncate(time.Microsecond),
	}
	switch {
	case strings.HasPrefix(r.CustomerID, "decline"):
		c.Status, c.DeclineCode = StatusDeclined, DeclineCardDeclined
	case r.Amount == 402:
		c.Status, c.DeclineCode = StatusDeclined, DeclineInsufficientFunds
	}
	return c
}

// NewID returns a new random charge id: "ch_" and 24 hex digits.
func NewID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "ch_" + hex.EncodeToString(b[:])
}
