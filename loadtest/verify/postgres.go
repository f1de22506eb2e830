package verify

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// likeRun is the LIKE pattern of the run's idempotency keys: "<run id>-%",
// with LIKE's wildcards in the run id escaped. An empty run id matches all.
func likeRun(runID string) string {
	if runID == "" {
		return "%"
	}
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(runID) + "-%"
}

func readPayments(ctx context.Context, db *pgxpool.Pool, runID string) ([]Payment, error) {
	rows, _ := db.Query(ctx, `SELECT id, merchant_id, idempotency_key, amount, request_fingerprint, currency, status,
			coalesce(psp_charge_id, ''), coalesce(failure_reason, ''), response_status, encode(sha256(response_body), 'hex'), created_at, updated_at
		FROM payments WHERE idempotency_key LIKE $1 ORDER BY created_at, id`, likeRun(runID))
	ps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Payment, error) {
		var p Payment
		err := row.Scan(&p.ID, &p.Merchant, &p.Key, &p.Amount, &p.Fingerprint, &p.Currency, &p.Status,
			&p.PSPChargeID, &p.FailureReason, &p.ResponseStatus, &p.ResponseSHA256, &p.CreatedAt, &p.UpdatedAt)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("read payments: %w", err)
	}
	return ps, nil
}

func readOutbox(ctx context.Context, db *pgxpool.Pool, runID string) ([]OutboxRow, error) {
	rows, _ := db.Query(ctx, `SELECT id, payment_id, published_at IS NOT NULL, created_at,
			coalesce(published_at, 'epoch'), attempts, republished, coalesce(republished_at, 'epoch')
		FROM outbox WHERE idempotency_key LIKE $1 ORDER BY id`, likeRun(runID))
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (OutboxRow, error) {
		var o OutboxRow
		err := row.Scan(&o.ID, &o.PaymentID, &o.Published, &o.CreatedAt, &o.PublishedAt, &o.Attempts, &o.Republished, &o.RepublishedAt)
		if !o.Published {
			o.PublishedAt = time.Time{}
		}
		if o.Republished == 0 {
			o.RepublishedAt = time.Time{}
		}
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	return out, nil
}

func readTakeovers(ctx context.Context, db *pgxpool.Pool, runID string) ([]Takeover, error) {
	rows, _ := db.Query(ctx, `SELECT t.payment_id, t.attempt, t.worker, t.taken_at
		FROM charge_takeovers t JOIN payments p ON p.id = t.payment_id
		WHERE p.idempotency_key LIKE $1 ORDER BY t.taken_at, t.id`, likeRun(runID))
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Takeover, error) {
		var t Takeover
		err := row.Scan(&t.PaymentID, &t.Attempt, &t.Worker, &t.TakenAt)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("read charge_takeovers: %w", err)
	}
	return out, nil
}

// progress counts the run's pending payments and unpublished outbox rows.
func progress(ctx context.Context, db *pgxpool.Pool, runID string) (pending, unpublished int, err error) {
	err = db.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM payments WHERE idempotency_key LIKE $1 AND status = 'pending'),
			(SELECT count(*) FROM outbox WHERE idempotency_key LIKE $1 AND published_at IS NULL)`,
		likeRun(runID)).Scan(&pending, &unpublished)
	if err != nil {
		return 0, 0, fmt.Errorf("count pending payments: %w", err)
	}
	return pending, unpublished, nil
}

func pendingIDs(ctx context.Context, db *pgxpool.Pool, runID string) ([]string, error) {
	rows, _ := db.Query(ctx, `SELECT id FROM payments WHERE idempotency_key LIKE $1 AND status = 'pending'`, likeRun(runID))
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read pending payments: %w", err)
	}
	return ids, nil
}
