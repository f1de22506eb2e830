// Package payments is the system of record for payments: rows in Postgres,
// created together with their outbox message in one transaction, and the
// durable idempotency backstop (one payment per merchant and key).
package payments

import (
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Statuses of a payment. The api creates pending payments; the worker moves
// them to succeeded or failed.
const (
	StatusPending   = "pending"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
)

// Errors returned by Store.
var (
	// ErrNotFound: no payment with that id for that merchant.
	ErrNotFound = errors.New("payments: not found")
	// ErrKeyReused: the merchant's idempotency key already belongs to a
	// payment created from a different request (fingerprint). Store.Create
	// returns it as a *KeyReusedError that names the holder.
	ErrKeyReused = errors.New("payments: idempotency key reused with a different request")
)

// Holder is the payment that holds a merchant's idempotency key: PaymentID,
// created from a request with fingerprint Fingerprint and first answered
// with Response.
type Holder struct {
	PaymentID   string
	Fingerprint string
	Response    Response
}

// KeyReusedError is Store.Create's ErrKeyReused: the key is held by
// another request's payment. Its Holder is what the idempotency boundary
// repairs Redis to after a loss, so that the holder's retries replay its
// Response while the reusing request gets its 422.
// errors.Is(err, ErrKeyReused) is true for it.
type KeyReusedError struct {
	Holder
}

func (e *KeyReusedError) Error() string {
	return fmt.Sprintf("payment %s holds the key: %v", e.PaymentID, ErrKeyReused)
}

// Is reports whether target is ErrKeyReused.
func (e *KeyReusedError) Is(target error) bool { return target == ErrKeyReused }

// Payment is one row of the payments table.
type Payment struct {
	ID             string
	MerchantID     string
	IdempotencyKey string
	Fingerprint    string // idem.Fingerprint of the creating request
	Amount         int64  // minor units
	Currency       string
	CustomerID     string
	Description    string
	Status         string
	FailureReason  *string // set when failed
	PSPChargeID    *string // set once charged
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Pending completes p as a new pending payment: a fresh id and both
// timestamps set to now in UTC, truncated to microseconds (what Postgres
// stores), so the time in the first answer reads back identically.
func Pending(p Payment, now time.Time) (Payment, error) {
	id, err := NewID()
	if err != nil {
		return Payment{}, err
	}
	p.ID = id
	p.Status = StatusPending
	p.CreatedAt = now.UTC().Truncate(time.Microsecond)
	p.UpdatedAt = p.CreatedAt
	return p, nil
}

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewID returns a payment id: "pay_" and 26 lowercase base32 characters
// (128 random bits).
func NewID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("payment id: %w", err)
	}
	return "pay_" + strings.ToLower(idEncoding.EncodeToString(b[:])), nil
}

// Response is the stored first answer to the request that created a
// payment, replayed byte for byte by the backstop.
type Response struct {
	Status int
	Body   []byte
}

// Created is the outcome of Store.Create.
type Created struct {
	// PaymentID is the payment that answers the request: the new one, or the
	// one that already held the key.
	PaymentID string
	// Response is the answer to give: the one passed to Create, or the
	// stored first answer when Backstop is true.
	Response Response
	// Backstop is true when the key already had a payment with the same
	// fingerprint: Redis had forgotten the key and the database answered.
	Backstop bool
	// Published, for a new payment, waits until its message's publish is
	// confirmed or the outbox's PublishTimeout has passed (a slow publish
	// goes on in the background); nil when nothing was published.
	Published func()
}
