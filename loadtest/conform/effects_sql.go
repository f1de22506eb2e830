package conform

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// EffectSQL reads effects from Postgres: Query gets the key as $1 and the
// credential ("a" or "b") as $2 and returns one integer, e.g.
//
//	SELECT count(*) FROM orders WHERE idempotency_key = $1
//	  AND tenant = CASE $2 WHEN 'a' THEN 'tenant_a' ELSE 'tenant_b' END
//
// Unlike EffectCommand it keeps its connections, so a storm's final reads
// are cheap.
type EffectSQL struct {
	Pool  *pgxpool.Pool
	Query string
}

// NewEffectSQL connects to the Postgres at dsn; close the pool when done.
func NewEffectSQL(ctx context.Context, dsn, query string) (EffectSQL, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return EffectSQL{}, fmt.Errorf("effect database: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return EffectSQL{}, fmt.Errorf("effect database: %w", err)
	}
	return EffectSQL{Pool: pool, Query: query}, nil
}

// Effects implements EffectReader.
func (e EffectSQL) Effects(ctx context.Context, q EffectQuery) (int, error) {
	var n int
	if err := e.Pool.QueryRow(ctx, e.Query, q.Key, q.Credential).Scan(&n); err != nil {
		return 0, fmt.Errorf("effect query: %w", err)
	}
	return n, nil
}
