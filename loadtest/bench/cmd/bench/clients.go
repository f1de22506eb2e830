package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// The databases bench creates on the bench harness's Postgres, afresh every
// run, so that table sizes are the same from run to run.
const (
	dbE2E = "bench"    // api and workers
	dbPSP = "benchpsp" // the psp's ledger
)

// clients are bench's own connections for measuring.
type clients struct {
	e2e *pgxpool.Pool // dbE2E
	psp *pgxpool.Pool // dbPSP
	rdb *redis.Client // the bench Redis, database 0
}

func (b *bench) closeClients() {
	if b.cl == nil {
		return
	}
	for _, p := range []*pgxpool.Pool{b.cl.e2e, b.cl.psp} {
		if p != nil {
			p.Close()
		}
	}
	b.cl.rdb.Close()
}

// prepare recreates the databases, migrates them and empties Redis.
func (b *bench) prepare(ctx context.Context) error {
	b.phase("prepare")
	admin, err := pgx.Connect(ctx, b.cfg.AdminDB)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer admin.Close(ctx)
	for _, db := range []struct{ name, program, env string }{{dbE2E, "api", "DATABASE_URL"}, {dbPSP, "psp", "PSP_DATABASE_URL"}} {
		if err := dropDatabase(ctx, admin, db.name); err != nil {
			return err
		}
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+db.name); err != nil {
			return err
		}
		env := []string{db.env + "=" + withDB(b.cfg.AdminDB, db.name)}
		if _, err := b.command(ctx, "migrate", time.Minute, b.cfg.Out, env, b.bin(db.program), "migrate"); err != nil {
			return err
		}
	}
	opt, err := redis.ParseURL(b.cfg.RedisURL)
	if err != nil {
		return err
	}
	b.cl = &clients{rdb: redis.NewClient(opt)}
	if b.cl.e2e, err = newPool(ctx, withDB(b.cfg.AdminDB, dbE2E)); err != nil {
		return err
	}
	if b.cl.psp, err = newPool(ctx, withDB(b.cfg.AdminDB, dbPSP)); err != nil {
		return err
	}
	return b.cl.rdb.FlushAll(ctx).Err()
}

// benchAppName is the application_name of bench's own Postgres
// connections, so that its CPU accounting can leave them out.
const benchAppName = "oncepay-bench"

func newPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = benchAppName
	return pgxpool.NewWithConfig(ctx, cfg)
}

// dropDatabase drops db, ending its connections. WITH (FORCE) cannot end an
// autovacuum worker for a role that is not a superuser (SQLSTATE 42501,
// "must be a member of the role whose process is being terminated"): right
// after the harness starts, autovacuum often works on the tables of the
// previous run. Such a worker ends on its own, so the drop is tried again
// for up to 10 s.
func dropDatabase(ctx context.Context, admin *pgx.Conn, db string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "42501" || time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("drop database %s: %w", db, err)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// vacuum runs VACUUM (ANALYZE) on the tables the end-to-end phases write,
// before each phase of a side-by-side pair: every settled payment leaves a
// dead row, and a vacuum resets autovacuum's counts, so that an autovacuum
// (up to a core for half a minute) does not start in one phase of a pair
// and not in the other. Autovacuum stays on.
func (b *bench) vacuum(ctx context.Context) {
	start := time.Now()
	for _, db := range []struct {
		pool   *pgxpool.Pool
		tables string
	}{
		{b.cl.e2e, "payments, outbox, charge_takeovers"},
		{b.cl.psp, "psp_idempotency, psp_charges, psp_calls"},
	} {
		if _, err := db.pool.Exec(ctx, "VACUUM (ANALYZE) "+db.tables); err != nil {
			b.note("vacuum %s: %v", db.tables, err)
		}
	}
	b.vacuumed += time.Since(start)
}
