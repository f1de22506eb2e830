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

// rewriteAOF rewrites Redis's AOF (BGREWRITEAOF) and waits for the rewrite
// to end, before each phase of a side-by-side pair. Redis rewrites its AOF
// by itself whenever the file has doubled; the bench's young data set
// doubles every few phases, and each rewrite (a fork that serialises the
// whole data set, seconds of a core) would land in whichever phase came
// next, always one of the boundary's copy, the only one that uses Redis.
// Rewriting just before a phase moves the next automatic rewrite beyond it.
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
