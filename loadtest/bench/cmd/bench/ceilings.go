package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/results"
)

const redisBenchClients = 50

// ceilings measures what Redis and Postgres can do alone for oncepay's own
// work: redis-benchmark on the boundary's begin and complete scripts, and
// pgbench on the api's transaction and the worker's update, unthrottled.
func (b *bench) ceilings(ctx context.Context) error {
	b.phase("ceilings")
	c := &results.Ceilings{PGClients: pgbenchClients, RedisClients: redisBenchClients}
	beginSHA, completeSHA, err := b.loadScripts(ctx)
	if err != nil {
		return err
	}
	host, port := redisHostPort(b.cfg.RedisURL)
	n := 200000
	if b.cfg.Quick {
		n = 50000
	}
	for rep := range b.cfg.Repeats {
		// Begin on fresh keys acquires (writes); complete on the same key space
		// completes what begin left pending, the way the api does.
		tag := fmt.Sprintf("idem:v1:{rb%d:__rand_int__}", rep)
		for _, s := range []struct {
			into *[]float64
			args []string
		}{
			{&c.RedisBegin, []string{"EVALSHA", beginSHA, "1", tag, "api", "owner", "fp", "10000", "60000"}},
			{&c.RedisComplete, []string{"EVALSHA", completeSHA, "1", tag, "api", "owner", `{"status":202,"body":"eyJpZCI6InBheV8xIn0="}`, "60000"}},
		} {
			argv := append([]string{b.cfg.RedisBenchmark, "-h", host, "-p", port, "--dbnum", "3", "-c", strconv.Itoa(redisBenchClients),
				"-n", strconv.Itoa(n), "-r", strconv.Itoa(n), "--csv"}, s.args...)
			out, err := b.command(ctx, "redis-benchmark", 3*time.Minute, b.cfg.Out, nil, argv...)
			if err != nil {
				return err
			}
			rps, err := parseRedisBenchmark(out)
			if err != nil {
				return err
			}
			*s.into = append(*s.into, rps)
		}
		b.logf("  redis-benchmark run %d: begin %.0f/s, complete %.0f/s", rep+1, c.RedisBegin[rep], c.RedisComplete[rep])
	}

	dur := "10"
	perClient := 5000
	if b.cfg.Quick {
		dur, perClient = "5", 2000
	}
	for rep := range b.cfg.Repeats {
		ins, err := b.pgbench(ctx, "pgbench", "api_insert.sql", 2*time.Minute,
			"-T", dur, "-D", "k=0", "-D", fmt.Sprintf("p=pay_ci%d_", rep))
		if err != nil {
			return err
		}
		ins4, err := b.pgbench(ctx, "pgbench", "api_insert_4rt.sql", 2*time.Minute,
			"-T", dur, "-D", "k=0", "-D", fmt.Sprintf("p=pay_cj%d_", rep))
		if err != nil {
			return err
		}
		c.PGInsert4RT = append(c.PGInsert4RT, ins4.TPS)
		prefix := fmt.Sprintf("pay_cu%d_", rep)
		if err := b.seedPending(ctx, prefix, perClient); err != nil {
			return err
		}
		upd, err := b.pgbench(ctx, "pgbench", "worker_update.sql", 2*time.Minute,
			"-t", strconv.Itoa(perClient), "-D", "k=0", "-D", "p="+prefix)
		if err != nil {
			return err
		}
		if moved, err := b.settledWithPrefix(ctx, prefix); err == nil && moved != upd.Processed {
			b.note("pgbench update run %d moved %d rows for %d transactions", rep+1, moved, upd.Processed)
		}
		c.PGInsert, c.PGUpdate = append(c.PGInsert, ins.TPS), append(c.PGUpdate, upd.TPS)
		b.logf("  pgbench run %d: api insert %.0f tps (as four round trips: %.0f), worker update %.0f tps", rep+1, ins.TPS, ins4.TPS, upd.TPS)
	}
	b.res.Ceilings = c
	return nil
}

// loadScripts loads begin.lua and complete.lua and returns their SHA1s.
func (b *bench) loadScripts(ctx context.Context) (string, string, error) {
	var shas []string
	for _, name := range []string{"begin.lua", "complete.lua"} {
		src, err := os.ReadFile(filepath.Join(b.cfg.Repo, "lua", name))
		if err != nil {
			return "", "", err
		}
		sha, err := b.cl.rdb.ScriptLoad(ctx, string(src)).Result()
		if err != nil {
			return "", "", fmt.Errorf("script load %s: %w", name, err)
		}
		shas = append(shas, sha)
	}
	return shas[0], shas[1], nil
}

// parseRedisBenchmark reads the requests/s of redis-benchmark --csv.
func parseRedisBenchmark(out string) (float64, error) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, ",")
		// "title","rps","avg","min","p50","p95","p99","max"; the title
		// holds the command and its arguments, commas included.
		if len(f) >= 8 && strings.HasPrefix(f[0], `"EVALSHA`) {
			return strconv.ParseFloat(strings.Trim(f[len(f)-7], `"`), 64)
		}
	}
	return 0, fmt.Errorf("redis-benchmark printed no EVALSHA line: %q", out)
}
