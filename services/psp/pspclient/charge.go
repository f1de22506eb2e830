package pspclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Charge statuses.
const (
	StatusSucceeded = "succeeded"
	StatusDeclined  = "declined"
)

// ChargeRequest is what to charge.
type ChargeRequest struct {
	Amount     int64  `json:"amount"`      // minor units, > 0
	Currency   string `json:"currency"`    // three upper-case letters, e.g. "EUR"
	CustomerID string `json:"customer_id"` // a customer_id starting with "decline" is always declined
	Reference  string `json:"reference"`   // the oncepay payment id
}

// Charge is the psp's answer to a charge: a success or a decline.
type Charge struct {
	ID          string    `json:"id"`
	Status      string    `json:"status"`                 // StatusSucceeded or StatusDeclined
	DeclineCode string    `json:"decline_code,omitempty"` // "card_declined", "insufficient_funds"; "" on success
	Amount      int64     `json:"amount"`
	Currency    string    `json:"currency"`
	CustomerID  string    `json:"customer_id"`
	Reference   string    `json:"reference"`
	CreatedAt   time.Time `json:"created_at"`
	Replayed    bool      `json:"-"` // the answer is the stored one of an earlier call with this key
}

// Charge charges req once per idempotencyKey (1..512 visible ASCII
// characters). A decline is not an error: it returns a Charge with Status
// StatusDeclined.
//
// Errors: errors.Is(err, ErrTransient) when the outcome is unknown or the
// psp failed (retry with the same key); errors.Is(err, ErrMismatch) when the
// key was used for a different request; otherwise a *Error for a rejected
// request (400 with field errors, 413, 415), or a decoding error.
func (c *Client) Charge(ctx context.Context, idempotencyKey string, req ChargeRequest) (Charge, error) {
	h := http.Header{"Idempotency-Key": {idempotencyKey}}
	resp, body, err := c.do(ctx, http.MethodPost, "/v1/charges", h, req)
	if err != nil {
		return Charge{}, fmt.Errorf("charge %q: %w", req.Reference, err)
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPaymentRequired {
		return Charge{}, fmt.Errorf("charge %q: %w", req.Reference, problemOf(resp, body))
	}
	var ch Charge
	if err := json.Unmarshal(body, &ch); err != nil {
		return Charge{}, fmt.Errorf("charge %q: decode answer: %w", req.Reference, err)
	}
	ch.Replayed = resp.Header.Get("Idempotent-Replayed") == "true"
	return ch, nil
}
