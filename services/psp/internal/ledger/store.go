// Package ledger is the simulator's Postgres store: the idempotency records,
// every call received (psp_calls) and every effective charge (psp_charges).
//
// The schema comes from the migrations package. A Store is safe for
// concurrent use.
package ledger

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Store reads and writes the ledger through a pgx pool it does not own.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a Store on pool. Closing the pool is the caller's job.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool}
}

// Ping reports whether Postgres answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping postgres: %w", err)
	}
	return nil
}

// Reset empties the ledger: calls, charges and idempotency records, so every
// key is new again. Concurrent charges wait for it.
func (s *Store) Reset(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, "TRUNCATE psp_calls, psp_charges, psp_idempotency RESTART IDENTITY"); err != nil {
		return fmt.Errorf("reset ledger: %w", err)
	}
	return nil
}
