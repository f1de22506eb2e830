package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
// autovacuum worker unless superuser (SQLSTATE 42501); such a worker ends
// on its own, so the drop is tried again for up to 10 s.
func dropDatabase(ctx context.Context, admin *pgx.Conn, db string) error {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		_, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		var pgErr *pgconn.PgError
		if err != nil && errors.As(err, &pgErr) && pgErr.Code == "42501" && time.Now().Before(deadline) {
			continue
		}
		if err != nil {
			return fmt.Errorf("drop database %s: %w", db, err)
		}
		return nil
	}
}

// vacuum runs VACUUM (ANALYZE) on the e2e tables before each phase of a
// pair, resetting autovacuum's counts so that an autovacuum does not start
// in one phase of a pair and not in the other. Autovacuum stays on.
func (b *bench) vacuum(ctx context.Context) {
	start := time.Now()
	pools := map[*pgxpool.Pool]string{b.cl.e2e: "payments, outbox, charge_takeovers", b.cl.psp: "psp_idempotency, psp_charges, psp_calls"}
	if b.patroni != nil {
		pools[b.patroni.pool] = "payments, outbox, charge_takeovers"
	}
	for pool, tables := range pools {
		if _, err := pool.Exec(ctx, "VACUUM (ANALYZE) "+tables); err != nil {
			b.note("vacuum %s: %v", tables, err)
		}
	}
	b.vacuumed += time.Since(start)
}

// redisState is what bench reads from Redis's INFO around a phase.
type redisState struct {
	AOFRewrites          int     // aof_rewrites since Redis started
	Rewriting, Scheduled bool    // aof_rewrite_in_progress, aof_rewrite_scheduled
	UsedMemory           float64 // used_memory, bytes
}

// redisNow reads redisState; ok is false if Redis did not answer.
func (b *bench) redisNow(ctx context.Context) (s redisState, ok bool) {
	info := b.cl.rdb.InfoMap(ctx, "persistence", "memory")
	s.AOFRewrites, _ = strconv.Atoi(info.Item("Persistence", "aof_rewrites"))
	s.Rewriting = info.Item("Persistence", "aof_rewrite_in_progress") == "1"
	s.Scheduled = info.Item("Persistence", "aof_rewrite_scheduled") == "1"
	s.UsedMemory, _ = strconv.ParseFloat(info.Item("Memory", "used_memory"), 64)
	return s, info.Err() == nil
}

// rewriteAOF rewrites Redis's AOF (BGREWRITEAOF, or the one running) and
// waits up to a minute for it to end, so that Redis's own rewrite (a fork
// costing seconds of a core) does not land in the boundary's next phase.
func (b *bench) rewriteAOF(ctx context.Context) {
	start := time.Now()
	defer func() { b.rewritten += time.Since(start) }()
	if err := b.cl.rdb.BgRewriteAOF(ctx).Err(); err != nil && !strings.Contains(err.Error(), "already in progress") {
		b.note("BGREWRITEAOF: %v", err)
		return
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(50 * time.Millisecond) {
		r, ok := b.redisNow(ctx)
		if !ok {
			b.note("BGREWRITEAOF: Redis did not answer INFO")
			return
		}
		if !r.Rewriting && !r.Scheduled {
			return
		}
	}
	if ctx.Err() == nil {
		b.note("BGREWRITEAOF: still rewriting after a minute; the phase starts anyway")
	}
}

// aofRewritesSince notes the AOF rewrites Redis started since before, for
// the phase named run, and returns how many.
func (b *bench) aofRewritesSince(ctx context.Context, run string, before redisState, okBefore bool) int {
	after, ok := b.redisNow(ctx)
	if !ok || !okBefore {
		return 0
	}
	n := after.AOFRewrites - before.AOFRewrites
	if n == 0 && (before.Rewriting || after.Rewriting) {
		n = 1 // one that started before the phase overlapped it
	}
	if n > 0 {
		b.note("%s: Redis rewrote its AOF during the phase (%d rewrite(s)); the phase competed with it for CPU", run, n)
	}
	return n
}

// autovacuums returns pg_stat_user_tables.autovacuum_count of every table
// of the end-to-end databases, by "database.table".
func (b *bench) autovacuums(ctx context.Context) map[string]int {
	out := map[string]int{}
	for db, pool := range map[string]*pgxpool.Pool{dbE2E: b.cl.e2e, dbPSP: b.cl.psp} {
		var names []string
		var counts []int
		_ = pool.QueryRow(ctx, `SELECT array_agg(relname::text), array_agg(autovacuum_count::int) FROM pg_stat_user_tables`).Scan(&names, &counts)
		for i, name := range names {
			out[db+"."+name] = counts[i]
		}
	}
	return out
}

// autovacuumedSince lists, sorted, the tables autovacuum finished since
// before.
func autovacuumedSince(before, after map[string]int) []string {
	var out []string
	for t, n := range after {
		if n > before[t] {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}
