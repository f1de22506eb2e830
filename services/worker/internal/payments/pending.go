package payments

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Pending returns up to limit payments still pending that were created more
// than olderThan ago and are due for reconciliation, the earliest due
// first: a payment is due at its creation until Defer puts it off. It
// reads the partial index on pending payments by due time, so its cost
// follows limit, not the table's size.
func (s *Store) Pending(ctx context.Context, olderThan time.Duration, limit int) ([]Payment, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT id, merchant_id, idempotency_key, amount, currency, customer_id,
		       status, coalesce(psp_charge_id, ''), coalesce(failure_reason, '')
		  FROM payments
		 WHERE status = 'pending' AND coalesce(reconcile_at, created_at) <= now()
		   AND created_at < now() - make_interval(secs => $1)
		 ORDER BY coalesce(reconcile_at, created_at)
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

// Defer puts payment id off after a reconciliation that did not settle
// it: it counts the attempt and makes the payment due again after base ×
// 2^(attempts before this one), at most limit, by the database's clock.
// A payment no longer pending is left alone.
func (s *Store) Defer(ctx context.Context, id string, base, limit time.Duration) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE payments
		   SET reconcile_attempts = reconcile_attempts + 1,
		       reconcile_at = now() + make_interval(secs => least($2 * power(2, least(reconcile_attempts, 40)), $3))
		 WHERE id = $1 AND status = 'pending'`, id, base.Seconds(), limit.Seconds())
	if err != nil {
		return fmt.Errorf("defer the reconciliation of payment %q: %w", id, err)
	}
	return nil
}
