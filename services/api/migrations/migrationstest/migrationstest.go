// Package migrationstest gives tests a database with the payments schema.
// It is test rig: product code must not import it.
package migrationstest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/services/api/migrations"
)

// NewPool returns a pool on a fresh database of t (testenv.NewDatabase)
// with every migration applied; the pool closes when t ends. It fails t
// when the database cannot be reached or migrated.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := migrations.Apply(ctx, pool); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return pool
}
