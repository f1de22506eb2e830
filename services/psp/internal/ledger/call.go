package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/oncepay/oncepay/services/psp/internal/charge"
)

// Call is one row of psp_calls: one request to POST /v1/charges. Pointer
// fields are nil (JSON null) when unknown: request fields that were missing or
// invalid, ChargeID when no charge id was answered, HTTPStatus when no answer
// was sent (fail_after, cancelled).
type Call struct {
	ID             int64          `json:"id" db:"id"`
	ReceivedAt     time.Time      `json:"received_at" db:"received_at"`
	IdempotencyKey *string        `json:"idempotency_key" db:"idempotency_key"`
	Reference      *string        `json:"reference" db:"reference"`
	Amount         *int64         `json:"amount" db:"amount"`
	Currency       *string        `json:"currency" db:"currency"`
	Outcome        charge.Outcome `json:"outcome" db:"outcome"`
	ChargeID       *string        `json:"charge_id" db:"charge_id"`
	HTTPStatus     *int32         `json:"http_status" db:"http_status"`
}

// ChargeRow is one row of psp_charges: one effective charge.
type ChargeRow struct {
	ID             string    `json:"id" db:"id"`
	IdempotencyKey string    `json:"idempotency_key" db:"idempotency_key"`
	Reference      string    `json:"reference" db:"reference"`
	Amount         int64     `json:"amount" db:"amount"`
	Currency       string    `json:"currency" db:"currency"`
	CustomerID     string    `json:"customer_id" db:"customer_id"`
	CreatedAt      time.Time `json:"created_at" db:"created_at"`
}

// execer is what inserting a call needs: a pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// RecordCall appends c to psp_calls (c.ID is assigned by Postgres and ignored).
// It is for calls that charge nothing; Charge records its own call.
func (s *Store) RecordCall(ctx context.Context, c Call) error {
	if err := insertCall(ctx, s.pool, c); err != nil {
		return fmt.Errorf("record %s call: %w", c.Outcome, err)
	}
	return nil
}

func insertCall(ctx context.Context, db execer, c Call) error {
	_, err := db.Exec(ctx, `INSERT INTO psp_calls
		(received_at, idempotency_key, reference, amount, currency, outcome, charge_id, http_status)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		c.ReceivedAt, c.IdempotencyKey, c.Reference, c.Amount, c.Currency, string(c.Outcome), c.ChargeID, c.HTTPStatus)
	return err
}
