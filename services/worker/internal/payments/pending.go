package payments

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Pending returns up to limit payments still pending that were created more
// than olderThan ago, oldest first. It reads the partial index on pending
// payments, so its cost follows limit, not the table's size.
func (s *Store) Pending(ctx context.Context, olderThan time.Duration, limit int) ([]Payment, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT id, merchant_id, idempotency_key, amount, currency, customer_id,
		       status, coalesce(psp_charge_id, ''), coalesce(failure_reason, '')
		  FROM payments
		 WHERE status = 'pending' AND created_at < now() - make_interval(secs => $1)
		 ORDER BY created_at
		 LIMIT $2`, olderThan.Seconds(), limit)
	ps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Payment, error) {
		var p Payment
		err := row.Scan(&p.ID, &p.MerchantID, &p.IdempotencyKey, &p.Amount, &p.Currency, &p.CustomerID,
			&p.Status, &p.PSPChargeID, &p.FailureReason)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("read pending payments: %w", err)
	}
	return ps, nil
}

// OldestPendingAge returns how long the oldest pending payment has been
// pending (since it was created), by the database's clock; 0 when none is.
// It reads one entry of the partial index on pending payments.
func (s *Store) OldestPendingAge(ctx context.Context) (time.Duration, error) {
	var secs float64
	err := s.pool.QueryRow(ctx, `
		SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8
		  FROM payments WHERE status = 'pending'`).Scan(&secs)
	if err != nil {
		return 0, fmt.Errorf("read the oldest pending payment: %w", err)
	}
	return time.Duration(max(secs, 0) * float64(time.Second)), nil
}
