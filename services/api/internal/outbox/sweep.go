package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncepay/oncepay/services/api/internal/metrics"
)

// SweepOnce runs one pass of the pending-payment sweeper and returns how
// many messages it published again.
//
// A confirmed publish only means that RabbitMQ took the message; it can
// still be lost on its way to the worker (a retry queue whose dead-letters
// RabbitMQ drops, a queue purged by hand), and the payment would stay
// pending for good. So, in one transaction, the sweeper locks up to
// BatchSize outbox rows whose payment is still pending, whose last publish
// (first confirm, or the sweeper's last) is older than SweepAge and that
// it has published again fewer than SweepLimit times, oldest payment
// first, skipping rows another replica's pass holds (FOR UPDATE SKIP
// LOCKED), publishes each with a confirm and counts it on the row. A row
// it just published is not due again for SweepAge, so two replicas never
// publish the same row in one round. The first failed publish ends the
// pass.
//
// Publishing again is safe: the worker dedupes by the boundary, the
// payment's compare-and-set and the psp's idempotency key. The limit
// keeps a payment the worker dead-lettered from being sent back forever:
// after it, the payment stays pending for an operator (and its message
// in the dead-letter queue).
func (o *Outbox) SweepOnce(ctx context.Context) (int, error) {
	type due struct {
		Message
		republished int
	}
	published := 0
	err := pgx.BeginFunc(ctx, o.pool, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT o.id, o.payment_id, o.merchant_id, o.idempotency_key, o.routing_key, o.payload,
				o.created_at, coalesce(o.trace_parent, ''), o.republished
			FROM payments p JOIN outbox o ON o.payment_id = p.id
			WHERE p.status = 'pending' AND p.created_at < now() - $1::float8 * interval '1 second'
				AND o.published_at IS NOT NULL
				AND coalesce(o.republished_at, o.published_at) < now() - $1::float8 * interval '1 second'
				AND o.republished < $2
			ORDER BY p.created_at, o.id LIMIT $3
			FOR UPDATE OF o SKIP LOCKED`, o.cfg.SweepAge.Seconds(), o.cfg.SweepLimit, o.cfg.BatchSize)
		batch, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (due, error) {
			var d due
			err := row.Scan(&d.ID, &d.PaymentID, &d.MerchantID, &d.IdempotencyKey, &d.RoutingKey, &d.Payload,
				&d.CreatedAt, &d.TraceParent, &d.republished)
			return d, err
		})
		if err != nil {
			return fmt.Errorf("select pending payments to sweep: %w", err)
		}
		for _, d := range batch {
			if err := o.publish(ctx, d.Message, metrics.PathSweep); err != nil {
				o.log.Warn("outbox sweep: publish failed; next pass", "payment_id", d.PaymentID, "err", err)
				return nil // commit what was published
			}
			if _, err := tx.Exec(ctx, `UPDATE outbox SET republished = republished + 1, republished_at = now()
				WHERE id = $1`, d.ID); err != nil {
				return fmt.Errorf("mark outbox row %d republished: %w", d.ID, err)
			}
			published++
			n := d.republished + 1
			if n < o.cfg.SweepLimit {
				o.log.Warn("outbox sweep: payment still pending; its message published again",
					"payment_id", d.PaymentID, "idempotency_key", d.IdempotencyKey, "republished", n, "limit", o.cfg.SweepLimit)
			} else {
				o.log.Error("outbox sweep: payment still pending; its message published again for the last time: if it stays pending, look for it in the dead-letter queue",
					"payment_id", d.PaymentID, "idempotency_key", d.IdempotencyKey, "republished", n, "limit", o.cfg.SweepLimit)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("outbox sweep: %w", err)
	}
	return published, nil
}
