package main

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

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

// rewriteAOF rewrites Redis's AOF (BGREWRITEAOF) and waits up to a minute
// for the rewrite to end, before each phase of a side-by-side pair: Redis
// rewrites by itself whenever the file has doubled, a fork that serialises
// the whole data set (seconds of a core), and would do so in whichever
// phase came next, always one of the boundary's copy. A rewrite already
// running is waited for alike.
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
