package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncepay/oncepay/services/api/internal/metrics"
)

// passTimeout bounds one relay pass. A pass stops at its first failed
// publish, so it is normally much shorter.
const passTimeout = 30 * time.Second

// Run relays every RelayInterval and sweeps every SweepInterval (if set)
// until ctx ends, then returns after the pass in progress (a pass is not
// cut short by ctx, so rows it published are marked; closing the Publisher
// makes a stuck pass fail fast).
func (o *Outbox) Run(ctx context.Context) {
	t := time.NewTicker(o.cfg.RelayInterval)
	defer t.Stop()
	var sweep <-chan time.Time // nil: never
	if o.cfg.SweepInterval > 0 {
		st := time.NewTicker(o.cfg.SweepInterval)
		defer st.Stop()
		sweep = st.C
	}
	for {
		name, once := "relay", o.RelayOnce
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-sweep:
			name, once = "sweep", o.SweepOnce
		}
		pass, cancel := context.WithTimeout(context.WithoutCancel(ctx), passTimeout)
		n, err := once(pass)
		cancel()
		switch {
		case err != nil:
			o.log.Warn("outbox "+name+" pass failed", "published", n, "err", err)
		case n > 0:
			o.log.Info("outbox "+name+" published", "published", n)
		}
	}
}

// RelayOnce runs one relay pass and returns how many messages it published.
//
// In one transaction it locks up to BatchSize rows unpublished for longer
// than RelayAge, oldest first, skipping rows locked by another replica's
// pass (FOR UPDATE SKIP LOCKED), so several replicas can relay at once
// without publishing the same row in the same moment. Each row is published
// with a confirm and marked published; the first failure is recorded on its
// row (attempts, last_error) and ends the pass, since the broker is then
// likely unavailable. Afterwards it refreshes the outbox_backlog gauge.
func (o *Outbox) RelayOnce(ctx context.Context) (int, error) {
	published := 0
	err := pgx.BeginFunc(ctx, o.pool, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT id, payment_id, merchant_id, idempotency_key, routing_key, payload, created_at,
				coalesce(trace_parent, '')
			FROM outbox
			WHERE published_at IS NULL AND created_at < now() - $1::float8 * interval '1 second'
			ORDER BY id LIMIT $2
			FOR UPDATE SKIP LOCKED`, o.cfg.RelayAge.Seconds(), o.cfg.BatchSize)
		due, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Message, error) {
			var m Message
			err := row.Scan(&m.ID, &m.PaymentID, &m.MerchantID, &m.IdempotencyKey, &m.RoutingKey, &m.Payload,
				&m.CreatedAt, &m.TraceParent)
			return m, err
		})
		if err != nil {
			return fmt.Errorf("select due outbox rows: %w", err)
		}
		for _, m := range due {
			if err := o.publish(ctx, m, metrics.PathRelay); err != nil {
				o.recordFailure(ctx, tx, m, err)
				return nil // commit what was published and the failure
			}
			if err := markPublished(ctx, tx, m.ID); err != nil {
				return err
			}
			published++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("outbox relay: %w", err)
	}
	var backlog int64
	if err := o.pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&backlog); err != nil {
		return published, fmt.Errorf("outbox relay: count backlog: %w", err)
	}
	o.metrics.OutboxBacklog.Set(float64(backlog))
	return published, nil
}
