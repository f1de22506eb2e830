package verify

import (
	"time"

	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/record"
)

// Snapshot is everything the checks look at, collected after the drain.
type Snapshot struct {
	RunID string
	// Now is the Redis server's clock when the boundary was read; leases
	// are compared with it.
	Now time.Time

	Payments  []Payment
	Outbox    []OutboxRow
	Takeovers []Takeover
	Charges   []Charge       // effective psp charges of the run
	PSPCalls  map[string]int // psp calls of the run by ledger outcome
	// PSPCallLog is every psp call of the run, in the ledger's order.
	PSPCallLog  []PSPCall
	Boundary    []Stage // every stage of every boundary record of the run
	Queues      []Queue
	DeadLetters []DeadLetter

	Attempts []record.Attempt
	Faults   []fault.Event
	Drain    DrainResult
	// ExpectFaults is false for a run without faults: invariant 6 is then
	// not checked.
	ExpectFaults bool
	// Lease is the api's IDEM_LEASE (invariant 8's key check); zero means
	// its default, 10 s.
	Lease time.Duration
	// RequireLanded makes every fault that did not land where it was aimed
	// (fault.Event.Landed) a violation of invariant 6 (make fault-matrix).
	RequireLanded bool
}

// Payment is one row of payments.
type Payment struct {
	ID             string    `json:"id"`
	Merchant       string    `json:"merchant_id"`
	Key            string    `json:"idempotency_key"`
	Amount         int64     `json:"amount"`
	Fingerprint    string    `json:"request_fingerprint"`
	Currency       string    `json:"currency"`
	Status         string    `json:"status"` // pending, succeeded, failed
	PSPChargeID    string    `json:"psp_charge_id,omitempty"`
	FailureReason  string    `json:"failure_reason,omitempty"`
	ResponseStatus int       `json:"response_status"`
	ResponseSHA256 string    `json:"response_sha256"` // hex SHA-256 of response_body
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// OutboxRow is one row of outbox.
type OutboxRow struct {
	ID        int64  `json:"id"`
	PaymentID string `json:"payment_id"`
	Published bool   `json:"published"`
	// CreatedAt is when the api committed the row; PublishedAt the broker's
	// first confirm (zero while unpublished). Attempts counts the relay's
	// publishes, Republished the sweeper's publishes after the first
	// confirm, RepublishedAt the last of those.
	CreatedAt     time.Time `json:"created_at"`
	PublishedAt   time.Time `json:"published_at"`
	Attempts      int       `json:"attempts"`
	Republished   int       `json:"republished"`
	RepublishedAt time.Time `json:"republished_at"`
}

// PSPCall is one call to the psp's POST /v1/charges, from its ledger.
type PSPCall struct {
	ReceivedAt     time.Time `json:"received_at"`
	IdempotencyKey string    `json:"idempotency_key"` // <merchant>:<key>, empty when the call had none
	Reference      string    `json:"reference"`       // the payment id, empty when the call had none
	Amount         int64     `json:"amount"`
	Outcome        string    `json:"outcome"` // charged, declined, replayed, cancelled, fail_after, ...
	ChargeID       string    `json:"charge_id,omitempty"`
	HTTPStatus     int       `json:"http_status,omitempty"` // 0: no answer was sent
}

// Takeover is one row of charge_takeovers: a worker claimed the charge
// stage over an expired lease.
type Takeover struct {
	PaymentID string    `json:"payment_id"`
	Attempt   int       `json:"attempt"`
	Worker    string    `json:"worker"`
	TakenAt   time.Time `json:"taken_at"`
}

// Charge is one effective charge in the psp ledger.
type Charge struct {
	ID             string    `json:"id"`
	IdempotencyKey string    `json:"idempotency_key"` // <merchant>:<key>, as the worker sends it
	Reference      string    `json:"reference"`       // the payment id
	Amount         int64     `json:"amount"`
	Currency       string    `json:"currency"`
	CreatedAt      time.Time `json:"created_at"`
}

// Stage is one stage of one boundary record, idem:v1:{<merchant>:<key>}.
type Stage struct {
	Key     string    `json:"key"`
	Stage   string    `json:"stage"` // api, charge
	State   string    `json:"state"` // P pending, C completed
	Owner   string    `json:"owner,omitempty"`
	Lease   time.Time `json:"lease"` // expiry of the lease
	Attempt int       `json:"attempt"`
}

// Queue is the depth of one RabbitMQ queue (messages ready).
type Queue struct {
	Name      string `json:"name"`
	Messages  int    `json:"messages"`
	Consumers int    `json:"consumers"`
	Missing   bool   `json:"missing,omitempty"` // the queue does not exist
}

// DeadLetter is one message in the dead-letter queue.
type DeadLetter struct {
	MessageID string `json:"message_id"` // the payment id
	Reason    string `json:"reason,omitempty"`
}

// DrainResult is how the drain after the load went.
type DrainResult struct {
	Took  time.Duration `json:"took_ns"`
	Limit time.Duration `json:"limit_ns"`
	// Complete: every payment terminal (or dead-lettered), outbox and
	// queues empty, no boundary stage pending past its lease.
	Complete bool `json:"complete"`
	// What was left when the drain ended.
	Pending     int `json:"pending"`
	Unpublished int `json:"unpublished"`
	Queued      int `json:"queued"`
	Stale       int `json:"stale"` // boundary stages pending past their lease
}
