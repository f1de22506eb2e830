package ledger

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oncepay/oncepay/services/psp/internal/charge"
)

// Ledger is the content of the ledger, oldest first.
type Ledger struct {
	Calls   []Call      `json:"calls"`
	Charges []ChargeRow `json:"charges"`
}

// Summary counts the ledger.
type Summary struct {
	Calls          int64                    `json:"calls"`
	CallsByOutcome map[charge.Outcome]int64 `json:"calls_by_outcome"` // every outcome, zeros included
	Charges        int64                    `json:"charges"`
	// ReferencesChargedMoreThanOnce lists, sorted, each reference with more
	// than one effective charge: a broken at-most-once guarantee.
	ReferencesChargedMoreThanOnce []string `json:"references_charged_more_than_once"`
}

// Read returns the calls and charges for reference, or the whole ledger when
// reference is "", from one consistent snapshot. It is not paginated.
func (s *Store) Read(ctx context.Context, reference string) (Ledger, error) {
	var l Ledger
	err := s.snapshot(ctx, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT id, received_at, idempotency_key, reference, amount, currency, outcome, charge_id, http_status
			FROM psp_calls WHERE $1 = '' OR reference = $1 ORDER BY id`, reference)
		calls, err := pgx.CollectRows(rows, pgx.RowToStructByName[Call])
		if err != nil {
			return fmt.Errorf("calls: %w", err)
		}
		rows, _ = tx.Query(ctx, `SELECT id, idempotency_key, reference, amount, currency, customer_id, created_at
			FROM psp_charges WHERE $1 = '' OR reference = $1 ORDER BY created_at, id`, reference)
		charges, err := pgx.CollectRows(rows, pgx.RowToStructByName[ChargeRow])
		if err != nil {
			return fmt.Errorf("charges: %w", err)
		}
		l = Ledger{Calls: calls, Charges: charges}
		return nil
	})
	if err != nil {
		return Ledger{}, fmt.Errorf("read ledger: %w", err)
	}
	return l, nil
}

// Summarize counts the ledger from one consistent snapshot.
func (s *Store) Summarize(ctx context.Context) (Summary, error) {
	sum := Summary{CallsByOutcome: make(map[charge.Outcome]int64)}
	for _, o := range charge.Outcomes() {
		sum.CallsByOutcome[o] = 0
	}
	err := s.snapshot(ctx, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT outcome, count(*) FROM psp_calls GROUP BY outcome`)
		var (
			outcome charge.Outcome
			n       int64
		)
		if _, err := pgx.ForEachRow(rows, []any{&outcome, &n}, func() error {
			sum.CallsByOutcome[outcome] = n
			sum.Calls += n
			return nil
		}); err != nil {
			return fmt.Errorf("count calls: %w", err)
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM psp_charges`).Scan(&sum.Charges); err != nil {
			return fmt.Errorf("count charges: %w", err)
		}
		rows, _ = tx.Query(ctx, `SELECT reference FROM psp_charges GROUP BY reference HAVING count(*) > 1 ORDER BY reference`)
		refs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("find duplicate charges: %w", err)
		}
		sum.ReferencesChargedMoreThanOnce = refs
		return nil
	})
	if err != nil {
		return Summary{}, fmt.Errorf("summarize ledger: %w", err)
	}
	return sum, nil
}

// snapshot runs fn in a read-only repeatable-read transaction.
func (s *Store) snapshot(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}
