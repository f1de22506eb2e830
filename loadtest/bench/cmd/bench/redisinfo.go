package main

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// This file reads the maintenance work that competes with a phase for CPU:
// Redis's AOF rewrites and Postgres's (auto)vacuums.

// redisState is what bench reads from Redis's INFO around a phase: the AOF
// rewrites so far (each one forks Redis and serialises the whole dataset:
// seconds of a core on this machine), whether one is running now, and the
// memory the dataset uses.
type redisState struct {
	AOFRewrites int     // INFO persistence aof_rewrites (since Redis started)
	Rewriting   bool    // INFO persistence aof_rewrite_in_progress
	Scheduled   bool    // INFO persistence aof_rewrite_scheduled (waits for a save to end)
	UsedMemory  float64 // INFO memory used_memory, bytes
}

// redisNow reads redisState; ok is false if Redis did not answer.
func (b *bench) redisNow(ctx context.Context) (s redisState, ok bool) {
	info := b.cl.rdb.InfoMap(ctx, "persistence", "memory")
	if info.Err() != nil {
		return s, false
	}
	s.AOFRewrites, _ = strconv.Atoi(info.Item("Persistence", "aof_rewrites"))
	s.Rewriting = info.Item("Persistence", "aof_rewrite_in_progress") == "1"
	s.Scheduled = info.Item("Persistence", "aof_rewrite_scheduled") == "1"
	s.UsedMemory, _ = strconv.ParseFloat(info.Item("Memory", "used_memory"), 64)
	return s, true
}

// recordEncoding is Redis's encoding of one boundary record (OBJECT
// ENCODING of a random key of the e2e database): "listpack" when the stored
// answers fit hash-max-listpack-value, else "hashtable", about twice the
// memory and a slower AOF rewrite.
func (b *bench) recordEncoding(ctx context.Context) string {
	key, err := b.cl.rdb.RandomKey(ctx).Result()
	if err != nil {
		return ""
	}
	enc, _ := b.cl.rdb.ObjectEncoding(ctx, key).Result()
	return enc
}

// rewriteAOF rewrites Redis's AOF (BGREWRITEAOF) and waits for the rewrite
// to end, before each phase of a side-by-side pair, for the reason vacuum
// runs there. Redis rewrites its AOF by itself whenever the file has doubled
// since the last rewrite; the bench's data set is young and grows from
// nothing to ~300,000 records in a run, so it doubles every few phases, and
// each rewrite (a fork that serialises the whole data set, 1-2 s of a core)
// lands in whichever phase comes next. Only the boundary's copy uses Redis,
// so without this the rewrites would slow its phases alone and bias the
// side-by-side comparison against it. A deployment's data set is in a
// steady state (a day of payments) and rewrites every several hours.
// Rewriting just before a phase moves the next automatic rewrite beyond
// it. The sustained runs are not preceded by one: they run with Redis's
// housekeeping as it comes, and report it.
func (b *bench) rewriteAOF(ctx context.Context) {
	start := time.Now()
	defer func() { b.rewritten += time.Since(start) }()
	// A rewrite already running (Redis's own, started when the file
	// doubled) is refused with an error; waiting for it serves as well.
	if err := b.cl.rdb.BgRewriteAOF(ctx).Err(); err != nil && !strings.Contains(err.Error(), "already in progress") {
		b.note("BGREWRITEAOF: %v", err)
		return
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		r, ok := b.redisNow(ctx)
		if !ok {
			b.note("BGREWRITEAOF: Redis did not answer INFO")
			return
		}
		if !r.Rewriting && !r.Scheduled {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	b.note("BGREWRITEAOF: still rewriting after a minute; the phase starts anyway")
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

// vacuuming reports whether a VACUUM (autovacuum or not) is running in one
// of the end-to-end databases now (pg_stat_progress_vacuum).
func (b *bench) vacuuming(ctx context.Context) bool {
	var n int
	_ = b.cl.e2e.QueryRow(ctx, `SELECT count(*) FROM pg_stat_progress_vacuum WHERE datname = ANY($1)`,
		[]string{dbE2E, dbPSP}).Scan(&n)
	return n > 0
}

// autovacuums returns pg_stat_user_tables.autovacuum_count of every table
// of the end-to-end databases, by "database.table".
func (b *bench) autovacuums(ctx context.Context) map[string]int {
	out := map[string]int{}
	for db, pool := range map[string]*pgxpool.Pool{dbE2E: b.cl.e2e, dbPSP: b.cl.psp} {
		rows, err := pool.Query(ctx, `SELECT relname, autovacuum_count FROM pg_stat_user_tables`)
		if err != nil {
			continue
		}
		for rows.Next() {
			var name string
			var n int
			if rows.Scan(&name, &n) == nil {
				out[db+"."+name] = n
			}
		}
		rows.Close()
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
