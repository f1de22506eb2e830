package ledger_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncepay/oncepay/internal/testenv"

	"github.com/oncepay/oncepay/services/psp/internal/charge"
	"github.com/oncepay/oncepay/services/psp/internal/ledger"
	"github.com/oncepay/oncepay/services/psp/migrations"
)

func newStore(t *testing.T) (*ledger.Store, *pgxpool.Pool) {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), testenv.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := migrations.Apply(t.Context(), pool, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	return ledger.New(pool), pool
}

func attempt(key string, req charge.Request) ledger.Attempt {
	c := charge.New(req, time.Now())
	return ledger.Attempt{
		ReceivedAt: time.Now(), Key: key, Request: req, Charge: c,
		HTTPStatus: 201, Body: []byte(`{"id":"` + c.ID + `"}`), Idempotency: true,
	}
}

// TestChargeWaitsForTheKeyHolder shows the blocking design: while another
// transaction holds a key's idempotency record uncommitted, a charge with
// that key waits; it then replays what was committed, or charges if the
// holder rolled back.
func TestChargeWaitsForTheKeyHolder(t *testing.T) {
	t.Parallel()
	req := charge.Request{Amount: 100, Currency: "EUR", CustomerID: "cus", Reference: "pay"}
	for _, commit := range []bool{true, false} {
		name := map[bool]string{true: "holder commits", false: "holder rolls back"}[commit]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store, pool := newStore(t)
			ctx := t.Context()
			holder, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = holder.Rollback(context.Background()) })
			if _, err := holder.Exec(ctx, `INSERT INTO psp_idempotency (idempotency_key, fingerprint, http_status, body, charge_id)
				VALUES ('k', $1, 201, '{"held":true}', 'ch_held')`, req.Fingerprint()); err != nil {
				t.Fatal(err)
			}

			type result struct {
				res ledger.Result
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := store.Charge(ctx, attempt("k", req))
				done <- result{res, err}
			}()
			select {
			case r := <-done:
				t.Fatalf("Charge returned while the key was held: %+v", r)
			case <-time.After(300 * time.Millisecond):
			}
			if commit {
				err = holder.Commit(ctx)
			} else {
				err = holder.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			switch {
			case commit && (r.res.Outcome != charge.OutcomeReplayed || r.res.ChargeID != "ch_held" || string(r.res.Body) != `{"held":true}`):
				t.Errorf("after commit: %+v, want a replay of ch_held", r.res)
			case !commit && r.res.Outcome != charge.OutcomeCharged:
				t.Errorf("after rollback: %+v, want charged", r.res)
			}
		})
	}
}

func TestSummaryOnEmptyLedger(t *testing.T) {
	t.Parallel()
	store, _ := newStore(t)
	sum, err := store.Summarize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Calls != 0 || sum.Charges != 0 || sum.ReferencesChargedMoreThanOnce == nil || len(sum.CallsByOutcome) != len(charge.Outcomes()) {
		t.Errorf("summary of an empty ledger = %+v, want zeros for every outcome and an empty (not nil) list", sum)
	}
	l, err := store.Read(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if l.Calls == nil || l.Charges == nil {
		t.Errorf("empty ledger = %+v, want empty lists, not nil", l)
	}
}
