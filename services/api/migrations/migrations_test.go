package migrations_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/services/api/migrations"
)

// TestApplyConcurrently starts several migrators at once, as several replicas
// would: every migration is applied exactly once and the schema works.
func TestApplyConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	all, err := migrations.All()
	if err != nil || len(all) == 0 {
		t.Fatalf("All() = %v, %v; want at least one migration", all, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ran, err := migrations.Apply(ctx, pool)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += len(ran)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != len(all) {
		t.Fatalf("4 concurrent migrators applied %d migrations in total, want %d", total, len(all))
	}
	_, err = pool.Exec(ctx, `INSERT INTO payments (id, merchant_id, idempotency_key, request_fingerprint, amount, currency,
		customer_id, response_status, response_body, created_at, updated_at)
		VALUES ('pay_1', 'm', 'k', 'fp', 100, 'EUR', 'c', 202, '{}', now(), now())`)
	if err != nil {
		t.Fatalf("insert into the migrated schema: %v", err)
	}
	_, err = pool.Exec(ctx, `INSERT INTO payments (id, merchant_id, idempotency_key, request_fingerprint, amount, currency,
		customer_id, response_status, response_body, created_at, updated_at)
		VALUES ('pay_2', 'm', 'k', 'fp', 100, 'EUR', 'c', 202, '{}', now(), now())`)
	if err == nil {
		t.Fatal("a second payment with the same (merchant, key) was accepted; the unique backstop is missing")
	}
}
