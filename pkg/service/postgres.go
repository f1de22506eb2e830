package service

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncepay/oncepay/pkg/service/ops"
	"github.com/oncepay/oncepay/pkg/service/pgpool"
)

// Postgres returns a pool on url whose connections have timeouts t
// (pgpool.New; it does not connect yet), closed at shutdown (OnStop) and
// required by readiness under the name "postgres".
func (s *Service) Postgres(ctx context.Context, url string, t pgpool.Timeouts, configure ...func(*pgxpool.Config)) (*pgxpool.Pool, error) {
	pool, err := pgpool.New(ctx, url, t, configure...)
	if err != nil {
		return nil, fmt.Errorf("postgres pool: %w", err)
	}
	s.OnStop("postgres", func(context.Context) error { pool.Close(); return nil })
	s.Check(ops.Check{Name: "postgres", Required: true, Fn: pool.Ping})
	return pool, nil
}
