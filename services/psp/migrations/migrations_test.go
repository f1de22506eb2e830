package migrations_test

import (
	"log/slog"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncepay/oncepay/internal/testenv"

	"github.com/oncepay/oncepay/services/psp/migrations"
)

func TestAll(t *testing.T) {
	t.Parallel()
	all, err := migrations.All()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 || all[0].Version != "0001" {
		t.Fatalf("All() = %+v, want 0001 first", all)
	}
}

func TestApplyConcurrentlyOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, err := pgxpool.New(ctx, testenv.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	log := slog.New(slog.NewTextHandler(t.Output(), nil))

	const starts = 4
	applied := make([][]string, starts)
	errs := make([]error, starts)
	var wg sync.WaitGroup
	for i := range starts {
		wg.Go(func() { applied[i], errs[i] = migrations.Apply(ctx, pool, log) })
	}
	wg.Wait()
	var total int
	for i := range starts {
		if errs[i] != nil {
			t.Errorf("start %d: %v", i, errs[i])
		}
		total += len(applied[i])
	}
	all, _ := migrations.All()
	if total != len(all) {
		t.Errorf("%d concurrent starts applied %d migrations in total, want %d", starts, total, len(all))
	}

	again, err := migrations.Apply(ctx, pool, log)
	if err != nil || len(again) != 0 {
		t.Errorf("second Apply = %v, %v; want nothing applied", again, err)
	}
	rows, _ := pool.Query(ctx, "SELECT version FROM schema_migrations ORDER BY version")
	versions, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range all {
		want = append(want, m.Version)
	}
	if diff := cmp.Diff(want, versions); diff != "" {
		t.Errorf("schema_migrations (-want +got):\n%s", diff)
	}
	for _, table := range []string{"psp_calls", "psp_charges", "psp_idempotency"} {
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Errorf("table %s: %v", table, err)
		}
	}
}
