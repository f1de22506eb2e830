package payments

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncepay/oncepay/services/api/migrations/migrationstest"
)

// newStore returns a Store on a fresh, migrated database.
func newStore(t *testing.T) (*Store, *pgxpool.Pool) {
	t.Helper()
	pool := migrationstest.NewPool(t)
	return New(pool), pool
}

func insertPending(t *testing.T, pool *pgxpool.Pool, id string) {
	t.Helper()
	now := time.Now()
	_, err := pool.Exec(context.Background(), `
		INSERT INTO payments (id, merchant_id, idempotency_key, request_fingerprint, amount, currency,
		                      customer_id, response_status, response_body, created_at, updated_at)
		VALUES ($1, 'm_1', $1 || '-key', 'fp', 1500, 'EUR', 'cus_1', 202, '{}', $2, $2)`, id, now)
	if err != nil {
		t.Fatal(err)
	}
}

func TestGetAndSettle(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	insertPending(t, pool, "pay_1")

	got, err := s.Get(ctx, "pay_1")
	if err != nil {
		t.Fatal(err)
	}
	want := Payment{ID: "pay_1", MerchantID: "m_1", IdempotencyKey: "pay_1-key", Amount: 1500, Currency: "EUR",
		CustomerID: "cus_1", Outcome: Outcome{Status: Pending}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Get (-want +got):\n%s", diff)
	}

	won, err := s.Settle(ctx, "pay_1", Outcome{Status: Succeeded, PSPChargeID: "ch_1"})
	if err != nil || !won {
		t.Fatalf("first Settle = %t, %v; want true", won, err)
	}
	won, err = s.Settle(ctx, "pay_1", Outcome{Status: Failed, FailureReason: "card_declined"})
	if err != nil || won {
		t.Fatalf("second Settle = %t, %v; want false (compare-and-set lost)", won, err)
	}
	got, _ = s.Get(ctx, "pay_1")
	if diff := cmp.Diff(Outcome{Status: Succeeded, PSPChargeID: "ch_1"}, got.Outcome); diff != "" {
		t.Errorf("outcome after the lost CAS (-want +got):\n%s", diff)
	}
}

func TestSettleDecline(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	insertPending(t, pool, "pay_2")
	if won, err := s.Settle(ctx, "pay_2", Outcome{Status: Failed, FailureReason: "insufficient_funds"}); err != nil || !won {
		t.Fatalf("Settle = %t, %v", won, err)
	}
	var charge *string
	var reason string
	if err := pool.QueryRow(ctx, "SELECT psp_charge_id, failure_reason FROM payments WHERE id = 'pay_2'").Scan(&charge, &reason); err != nil {
		t.Fatal(err)
	}
	if charge != nil || reason != "insufficient_funds" {
		t.Errorf("psp_charge_id %v, failure_reason %q; want NULL, insufficient_funds", charge, reason)
	}
	if _, err := s.Settle(ctx, "pay_2", Outcome{Status: Pending}); err == nil {
		t.Error("settling to pending did not fail")
	}
}

func TestGetUnknown(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	if _, err := s.Get(context.Background(), "pay_nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("err = %v, want ErrNotFound", err)
	}
}

func TestRecordTakeover(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	if err := s.RecordTakeover(ctx, "pay_3", 2, "worker-b"); err != nil {
		t.Fatal(err)
	}
	var id, worker string
	var attempt int
	if err := pool.QueryRow(ctx, "SELECT payment_id, attempt, worker FROM charge_takeovers").Scan(&id, &attempt, &worker); err != nil {
		t.Fatal(err)
	}
	if id != "pay_3" || attempt != 2 || worker != "worker-b" {
		t.Errorf("row = %s %d %s", id, attempt, worker)
	}
}
