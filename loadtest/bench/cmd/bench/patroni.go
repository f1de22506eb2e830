package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// With BENCH_PG=patroni the e2e phase's second copy runs with the boundary
// on, like the first, against Postgres under Patroni with synchronous
// replication (scripts/patroni: three Postgres nodes and etcd on this
// machine) instead of with the boundary off against the harness's one
// node. The two copies then differ in the system of record only, and the
// phase's paired numbers (p50, CPU per payment) set one node beside
// synchronous replication in one run. The psp's ledger stays on the one
// node. The cluster is bootstrapped afresh for the run and deleted after.

// patroniCluster is the run's Postgres under Patroni.
type patroniCluster struct {
	env  []string      // PATRONI_DIR, PATRONI_PORT_BASE and its settings
	url  string        // the oncepay database's multi-host DSN
	pool *pgxpool.Pool // bench's own connections to it
	dir  string        // its state directory
}

// patroniScript runs scripts/patroni with args and the cluster's env.
func (b *bench) patroniScript(ctx context.Context, env []string, timeout time.Duration, args ...string) (string, error) {
	r, err := b.command(ctx, "patroni-"+args[0], timeout, b.cfg.Repo, env, append([]string{filepath.Join(b.cfg.Repo, "scripts", "patroni")}, args...)...)
	return r.Out, err
}

// startPatroni bootstraps the cluster (synchronous_mode), migrates its
// oncepay database with the api's migrations and connects to it.
func (b *bench) startPatroni(ctx context.Context) error {
	b.phase("prepare: Postgres under Patroni (BENCH_PG=patroni)")
	dir := filepath.Join(b.cfg.HarnessDir, "patroni-bench")
	env := []string{"PATRONI_DIR=" + dir, "PATRONI_PORT_BASE=" + strconv.Itoa(b.cfg.PatroniPortBase),
		"PATRONI_SYNCHRONOUS_MODE=true", "PATRONI_MAXIMUM_LAG_ON_FAILOVER=1048576"}
	c := &patroniCluster{env: env, dir: dir}
	b.patroni = c
	if _, err := b.patroniScript(ctx, env, 2*time.Minute, "down", "--purge"); err != nil {
		return err
	}
	if _, err := b.patroniScript(ctx, env, 5*time.Minute, "up"); err != nil {
		return fmt.Errorf("scripts/patroni up: %w", err)
	}
	out, err := b.patroniScript(ctx, env, time.Minute, "dsn", "oncepay")
	if err != nil {
		return err
	}
	c.url = strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])
	if _, err := b.command(ctx, "migrate-patroni", time.Minute, b.cfg.Out, []string{"DATABASE_URL=" + c.url}, b.bin("api"), "migrate"); err != nil {
		return err
	}
	c.pool, err = newPool(ctx, c.url)
	return err
}

// stopPatroni closes bench's connections and stops and deletes the
// cluster, if the run started one.
func (b *bench) stopPatroni() {
	c := b.patroni
	if c == nil {
		return
	}
	if c.pool != nil {
		c.pool.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := b.patroniScript(ctx, c.env, 3*time.Minute, "down", "--purge"); err != nil {
		b.note("scripts/patroni down --purge: %v", err)
	}
}

// patroniPIDs are the cluster's processes for CPU accounting: each node's
// postmaster and Patroni, and etcd. Their children (backends, WAL
// senders and receivers) are counted with them.
func (c *patroniCluster) pids() []int {
	var out []int
	for _, f := range []string{"etcd/etcd.pid", "pg-1/patroni.pid", "pg-2/patroni.pid", "pg-3/patroni.pid",
		"pg-1/data/postmaster.pid", "pg-2/data/postmaster.pid", "pg-3/data/postmaster.pid"} {
		raw, _ := os.ReadFile(filepath.Join(c.dir, f))
		line, _, _ := strings.Cut(string(raw), "\n")
		if pid, err := strconv.Atoi(strings.TrimSpace(line)); err == nil {
			out = append(out, pid)
		}
	}
	return out
}
