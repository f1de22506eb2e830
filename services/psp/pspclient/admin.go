package pspclient

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Config is the psp's fault knobs (GET /admin/config).
type Config struct {
	LatencyMS       int64   `json:"latency_ms"`
	LatencyJitterMS int64   `json:"latency_jitter_ms"`
	FailBeforeRate  float64 `json:"fail_before_rate"`
	ErrorRate       float64 `json:"error_rate"`
	FailAfterRate   float64 `json:"fail_after_rate"`
	Idempotency     bool    `json:"idempotency"`
	Seed            int64   `json:"seed"`
	// RejectRate is the share of new charges rejected for good (400
	// charge-rejected, stored under the key), until RejectUntil when set.
	RejectRate  float64    `json:"reject_rate"`
	RejectUntil *time.Time `json:"reject_until"`
}

// ConfigPatch changes some knobs (PUT /admin/config); nil fields stay as
// they are. With Go 1.26: ConfigPatch{FailAfterRate: new(0.2)}.
type ConfigPatch struct {
	LatencyMS       *int64   `json:"latency_ms,omitempty"`
	LatencyJitterMS *int64   `json:"latency_jitter_ms,omitempty"`
	FailBeforeRate  *float64 `json:"fail_before_rate,omitempty"`
	ErrorRate       *float64 `json:"error_rate,omitempty"`
	FailAfterRate   *float64 `json:"fail_after_rate,omitempty"`
	Idempotency     *bool    `json:"idempotency,omitempty"`
	Seed            *int64   `json:"seed,omitempty"` // restarts the fault RNG
	// RejectRate sets reject_rate; RejectForMS (only with RejectRate) ends
	// it after that many milliseconds, when reject_rate returns to 0.
	RejectRate  *float64 `json:"reject_rate,omitempty"`
	RejectForMS *int64   `json:"reject_for_ms,omitempty"`
}

// Outcome classifies a call in the ledger.
type Outcome string

// Outcomes of a call; only OutcomeCharged and OutcomeFailAfter made a charge.
const (
	OutcomeCharged    Outcome = "charged"
	OutcomeDeclined   Outcome = "declined"
	OutcomeReplayed   Outcome = "replayed"
	OutcomeMismatch   Outcome = "mismatch"
	OutcomeFailBefore Outcome = "fail_before"
	OutcomeFailAfter  Outcome = "fail_after"
	OutcomeError      Outcome = "error"
	OutcomeInvalid    Outcome = "invalid"
	OutcomeCancelled  Outcome = "cancelled"
	OutcomeRejected   Outcome = "rejected" // reject_rate: answered 400 charge-rejected, replayed for its key
)

// Call is one call received by POST /v1/charges. Fields the call did not
// carry validly are zero; HTTPStatus is 0 when no answer was sent.
type Call struct {
	ID             int64     `json:"id"`
	ReceivedAt     time.Time `json:"received_at"`
	IdempotencyKey string    `json:"idempotency_key"`
	Reference      string    `json:"reference"`
	Amount         int64     `json:"amount"`
	Currency       string    `json:"currency"`
	Outcome        Outcome   `json:"outcome"`
	ChargeID       string    `json:"charge_id"` // the charge id answered (also for declines and replays)
	HTTPStatus     int       `json:"http_status"`
}

// LedgerCharge is one effective charge.
type LedgerCharge struct {
	ID             string    `json:"id"`
	IdempotencyKey string    `json:"idempotency_key"`
	Reference      string    `json:"reference"`
	Amount         int64     `json:"amount"`
	Currency       string    `json:"currency"`
	CustomerID     string    `json:"customer_id"`
	CreatedAt      time.Time `json:"created_at"`
}

// Ledger is the psp's record of calls and effective charges, oldest first.
type Ledger struct {
	Calls   []Call         `json:"calls"`
	Charges []LedgerCharge `json:"charges"`
}

// Summary counts the ledger.
type Summary struct {
	Calls                         int64             `json:"calls"`
	CallsByOutcome                map[Outcome]int64 `json:"calls_by_outcome"`
	Charges                       int64             `json:"charges"`
	ReferencesChargedMoreThanOnce []string          `json:"references_charged_more_than_once"`
}

// Config returns the fault knobs in force.
func (c *Client) Config(ctx context.Context) (Config, error) {
	var cfg Config
	err := c.call(ctx, http.MethodGet, "/admin/config", nil, &cfg)
	return cfg, err
}

// SetConfig applies patch and returns the knobs now in force. Invalid values
// fail with a *Error (400) listing every problem; nothing is changed then.
func (c *Client) SetConfig(ctx context.Context, patch ConfigPatch) (Config, error) {
	var cfg Config
	err := c.call(ctx, http.MethodPut, "/admin/config", patch, &cfg)
	return cfg, err
}

// Ledger returns the calls and charges for reference, or all of them when
// reference is "".
func (c *Client) Ledger(ctx context.Context, reference string) (Ledger, error) {
	path := "/admin/ledger"
	if reference != "" {
		path += "?" + url.Values{"reference": {reference}}.Encode()
	}
	var l Ledger
	err := c.call(ctx, http.MethodGet, path, nil, &l)
	return l, err
}

// Summary returns the ledger's counts.
func (c *Client) Summary(ctx context.Context) (Summary, error) {
	var s Summary
	err := c.call(ctx, http.MethodGet, "/admin/ledger/summary", nil, &s)
	return s, err
}

// ResetLedger empties the ledger, idempotency records included.
func (c *Client) ResetLedger(ctx context.Context) error {
	return c.call(ctx, http.MethodDelete, "/admin/ledger", nil, nil)
}
