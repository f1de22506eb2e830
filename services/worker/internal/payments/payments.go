// Package payments is the worker's access to the payments table, the system
// of record: it reads a payment, moves it from pending to a terminal status
// with a compare-and-set, and records lease takeovers.
package payments

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Statuses of a payment (the table's CHECK constraint).
const (
	Pending   = "pending"
	Succeeded = "succeeded"
	Failed    = "failed"
)

// ErrNotFound is returned by Get for an unknown payment id.
var ErrNotFound = errors.New("payments: not found")

// Payment is the part of a payments row the worker uses.
type Payment struct {
	ID             string
	MerchantID     string
	IdempotencyKey string
	Amount         int64
	Currency       string
	CustomerID     string
	Outcome
}

// Outcome is a payment's status and what the psp said about it.
type Outcome struct {
	Status        string // Pending, Succeeded or Failed
	PSPChargeID   string // set when Succeeded
	FailureReason string // the decline code when Failed
}

// Terminal reports whether o is final (Succeeded or Failed).
func (o Outcome) Terminal() bool { return o.Status == Succeeded || o.Status == Failed }

// Store reads and writes payments. It is safe for concurrent use.
type Store struct{ pool *pgxpool.Pool }

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Get returns payment id, or ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (Payment, error) {
	var p Payment
	err := s.pool.QueryRow(ctx, `
		SELECT id, merchant_id, idempotency_key, amount, currency, customer_id,
		       status, coalesce(psp_charge_id, ''), coalesce(failure_reason, '')
		  FROM payments WHERE id = $1`, id).Scan(
		&p.ID, &p.MerchantID, &p.IdempotencyKey, &p.Amount, &p.Currency, &p.CustomerID,
		&p.Status, &p.PSPChargeID, &p.FailureReason)
	if errors.Is(err, pgx.ErrNoRows) {
		return Payment{}, fmt.Errorf("payment %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Payment{}, fmt.Errorf("read payment %q: %w", id, err)
	}
	return p, nil
}

// Settle moves payment id from pending to o (a terminal outcome) in one
// compare-and-set. It reports false, changing nothing, when the payment is
// no longer pending (someone else settled it first): the caller re-reads.
func (s *Store) Settle(ctx context.Context, id string, o Outcome) (bool, error) {
	if !o.Terminal() {
		return false, fmt.Errorf("settle payment %q: status %q is not terminal", id, o.Status)
	}
	tag, err := s.pool.Exec(ctx, `
		UPDATE payments
		   SET status = $2, psp_charge_id = $3, failure_reason = $4, updated_at = now()
		 WHERE id = $1 AND status = 'pending'`,
		id, o.Status, nullable(o.PSPChargeID), nullable(o.FailureReason))
	if err != nil {
		return false, fmt.Errorf("settle payment %q: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// RecordTakeover records that worker claimed the charge stage of paymentID
// over an expired lease, as claim attempt number attempt.
func (s *Store) RecordTakeover(ctx context.Context, paymentID string, attempt int, worker string) error {
	_, err := s.pool.Exec(ctx,
		`INSERT INTO charge_takeovers (payment_id, attempt, worker) VALUES ($1, $2, $3)`,
		paymentID, attempt, worker)
	if err != nil {
		return fmt.Errorf("record takeover of %q: %w", paymentID, err)
	}
	return nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
