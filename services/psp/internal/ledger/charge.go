package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oncepay/oncepay/services/psp/internal/charge"
)

// Attempt is a valid charge call about to be processed, with the answer it
// gets if it turns out to be new.
type Attempt struct {
	ReceivedAt  time.Time
	Key         string
	Request     charge.Request
	Charge      charge.Charge // the new charge or decline, used only if the call is new
	HTTPStatus  int           // status of the answer for a new call (201 or 402)
	Body        []byte        // exact bytes of that answer
	Idempotency bool          // false: no idempotency record is read or written
	FailAfter   bool          // a new effective charge is recorded as fail_after (no answer will be sent)
}

// Result is what to answer for an Attempt.
type Result struct {
	Outcome    charge.Outcome
	HTTPStatus int    // for OutcomeMismatch 422, for OutcomeFailAfter the status that is not sent
	Body       []byte // the answer for charged, declined, replayed and fail_after; nil for mismatch
	ChargeID   string // the charge id answered, "" for mismatch
}

// Charge processes a in one transaction and records the call.
//
// With a.Idempotency it first inserts the idempotency record for a.Key. If
// the key is already recorded (a concurrent transaction holding it makes this
// wait until that one ends), nothing is charged: the call is a replay of the
// stored answer when the fingerprints match, a mismatch otherwise. A new call
// inserts the record with a's answer, the charge row when a.Charge is
// effective, and the call row, and commits them together.
//
// Charge does not stop half way: once begun it runs to commit or rollback
// even if ctx is cancelled, bounded by a 15 s timeout.
func (s *Store) Charge(ctx context.Context, a Attempt) (Result, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	var res Result
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		res, err = chargeTx(ctx, tx, a)
		return err
	})
	if err != nil {
		return Result{}, fmt.Errorf("charge key %q: %w", a.Key, err)
	}
	return res, nil
}

func chargeTx(ctx context.Context, tx pgx.Tx, a Attempt) (Result, error) {
	fingerprint := a.Request.Fingerprint()
	call := Call{
		ReceivedAt:     a.ReceivedAt,
		IdempotencyKey: &a.Key,
		Reference:      &a.Request.Reference,
		Amount:         &a.Request.Amount,
		Currency:       &a.Request.Currency,
	}
	if a.Idempotency {
		tag, err := tx.Exec(ctx, `INSERT INTO psp_idempotency (idempotency_key, fingerprint, http_status, body, charge_id)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT (idempotency_key) DO NOTHING`,
			a.Key, fingerprint, a.HTTPStatus, a.Body, a.Charge.ID)
		if err != nil {
			return Result{}, fmt.Errorf("insert idempotency record: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return seen(ctx, tx, a.Key, fingerprint, call)
		}
	}
	res := Result{Outcome: charge.OutcomeDeclined, HTTPStatus: a.HTTPStatus, Body: a.Body, ChargeID: a.Charge.ID}
	if a.Charge.Effective() {
		res.Outcome = charge.OutcomeCharged
		if a.FailAfter {
			res.Outcome = charge.OutcomeFailAfter
		}
		c := a.Charge
		if _, err := tx.Exec(ctx, `INSERT INTO psp_charges (id, idempotency_key, reference, amount, currency, customer_id, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			c.ID, a.Key, c.Reference, c.Amount, c.Currency, c.CustomerID, c.CreatedAt); err != nil {
			return Result{}, fmt.Errorf("insert charge: %w", err)
		}
	}
	call.Outcome, call.ChargeID = res.Outcome, &res.ChargeID
	if res.Outcome != charge.OutcomeFailAfter {
		call.HTTPStatus = new(int32(res.HTTPStatus))
	}
	if err := insertCall(ctx, tx, call); err != nil {
		return Result{}, fmt.Errorf("insert call: %w", err)
	}
	return res, nil
}

// seen answers a call whose key is already recorded: a replay or a mismatch.
func seen(ctx context.Context, tx pgx.Tx, key string, fingerprint []byte, call Call) (Result, error) {
	var (
		stored []byte
		res    Result
	)
	err := tx.QueryRow(ctx, `SELECT fingerprint, http_status, body, charge_id FROM psp_idempotency WHERE idempotency_key = $1`, key).
		Scan(&stored, &res.HTTPStatus, &res.Body, &res.ChargeID)
	if errors.Is(err, pgx.ErrNoRows) {
		// Only a concurrent Reset can remove the record between the insert and
		// this read; the caller gets an error and may retry.
		return Result{}, errors.New("idempotency record vanished (ledger reset?)")
	}
	if err != nil {
		return Result{}, fmt.Errorf("read idempotency record: %w", err)
	}
	res.Outcome = charge.OutcomeReplayed
	call.ChargeID = &res.ChargeID
	if !bytes.Equal(stored, fingerprint) {
		res = Result{Outcome: charge.OutcomeMismatch, HTTPStatus: 422}
		call.ChargeID = nil
	}
	call.Outcome, call.HTTPStatus = res.Outcome, new(int32(res.HTTPStatus))
	if err := insertCall(ctx, tx, call); err != nil {
		return Result{}, fmt.Errorf("insert call: %w", err)
	}
	return res, nil
}
