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
	Charge      charge.Charge // the new charge or decline, used only if the call is new; zero for a rejection
	HTTPStatus  int           // status of the answer for a new call (201, 402, or 400 for a rejection)
	Body        []byte        // exact bytes of that answer
	Idempotency bool          // false: no idempotency record is read or written
	FailAfter   bool          // a new effective charge is recorded as fail_after (no answer will be sent)
	Rejected    bool          // the answer is a permanent rejection (outcome rejected), stored like a decline
}

// Result is what to answer for an Attempt.
type Result struct {
	Outcome    charge.Outcome
	HTTPStatus int    // for OutcomeMismatch 422, for OutcomeFailAfter the status that is not sent
	Body       []byte // the answer for charged, declined, replayed and fail_after; nil for mismatch
	ChargeID   string // the charge id answered, "" for mismatch
}

// Charge processes a and records the call, atomically.
//
// With a.Idempotency it first inserts the idempotency record for a.Key. If
// the key is already recorded (a concurrent transaction holding it makes this
// wait until that one ends), nothing is charged: the call is a replay of the
// stored answer when the fingerprints match, a mismatch otherwise. A new call
// inserts the record with a's answer, the charge row when a.Charge is
// effective, and the call row, and commits them together: one statement
// (chargeSQL), so one round trip. A replay or mismatch then reads the record
// and records its call in a transaction of its own.
//
// Charge does not stop half way: once begun it runs to commit or rollback
// even if ctx is cancelled, bounded by a 15 s timeout.
func (s *Store) Charge(ctx context.Context, a Attempt) (Result, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	fingerprint := a.Request.Fingerprint()
	res := Result{Outcome: charge.OutcomeDeclined, HTTPStatus: a.HTTPStatus, Body: a.Body, ChargeID: a.Charge.ID}
	switch {
	case a.Rejected:
		res.Outcome = charge.OutcomeRejected
	case a.Charge.Effective():
		res.Outcome = charge.OutcomeCharged
		if a.FailAfter {
			res.Outcome = charge.OutcomeFailAfter
		}
	}
	var status *int32 // none for fail_after: no answer is sent
	if res.Outcome != charge.OutcomeFailAfter {
		status = new(int32(res.HTTPStatus)) // #nosec G115 -- an HTTP status (100-599) fits int32
	}
	c := a.Charge
	var fresh bool
	err := s.pool.QueryRow(ctx, chargeSQL,
		a.Key, fingerprint, a.HTTPStatus, a.Body, c.ID, a.Idempotency,
		c.Reference, c.Amount, c.Currency, c.CustomerID, c.CreatedAt, c.Effective(),
		a.ReceivedAt, a.Request.Reference, a.Request.Amount, a.Request.Currency, string(res.Outcome), status,
	).Scan(&fresh)
	if err == nil && !fresh {
		call := Call{ReceivedAt: a.ReceivedAt, IdempotencyKey: &a.Key, Reference: &a.Request.Reference,
			Amount: &a.Request.Amount, Currency: &a.Request.Currency}
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var err error
			res, err = seen(ctx, tx, a.Key, fingerprint, call)
			return err
		})
	}
	if err != nil {
		return Result{}, fmt.Errorf("charge key %q: %w", a.Key, err)
	}
	return res, nil
}

// chargeSQL records a new call in one statement (one implicit transaction):
// with idempotency on ($6) the idempotency record, and, only if that record
// is new or idempotency is off, the charge row when the charge is effective
// ($12) and the call row. It returns whether the call was new; false means
// the key was already recorded (ON CONFLICT waits for a concurrent
// transaction that holds it, as the insert inside a transaction did).
const chargeSQL = `
WITH idem AS (
	INSERT INTO psp_idempotency (idempotency_key, fingerprint, http_status, body, charge_id)
	SELECT $1::text, $2::bytea, $3::integer, $4::bytea, $5::text WHERE $6::boolean
	ON CONFLICT (idempotency_key) DO NOTHING
	RETURNING 1
), fresh AS (
	SELECT NOT $6::boolean OR EXISTS (SELECT 1 FROM idem) AS yes
), charged AS (
	INSERT INTO psp_charges (id, idempotency_key, reference, amount, currency, customer_id, created_at)
	SELECT $5, $1, $7::text, $8::bigint, $9::text, $10::text, $11::timestamptz FROM fresh WHERE yes AND $12::boolean
), called AS (
	INSERT INTO psp_calls (received_at, idempotency_key, reference, amount, currency, outcome, charge_id, http_status)
	SELECT $13::timestamptz, $1, $14::text, $15::bigint, $16::text, $17::text, nullif($5, ''), $18::integer FROM fresh WHERE yes
)
SELECT yes FROM fresh`

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
	if res.ChargeID != "" { // a rejection has none
		call.ChargeID = &res.ChargeID
	}
	if !bytes.Equal(stored, fingerprint) {
		res = Result{Outcome: charge.OutcomeMismatch, HTTPStatus: 422}
		call.ChargeID = nil
	}
	call.Outcome, call.HTTPStatus = res.Outcome, new(int32(res.HTTPStatus)) // #nosec G115 -- an HTTP status fits int32
	if err := insertCall(ctx, tx, call); err != nil {
		return Result{}, fmt.Errorf("insert call: %w", err)
	}
	return res, nil
}
