package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// pgbenchResult is what pgbench printed.
type pgbenchResult struct {
	Processed int
	Failed    int
	TPS       float64
	LatAvgMS  float64
	LagAvgMS  float64 // -R only: how late transactions started against the schedule
	LagMaxMS  float64
	Skipped   int // -R with -L: transactions skipped because they could only start later than the limit
	Late      int // -L: transactions that took longer than the limit
}

var (
	pgProcessed = regexp.MustCompile(`number of transactions actually processed: (\d+)`)
	pgFailed    = regexp.MustCompile(`number of failed transactions: (\d+)`)
	pgTPS       = regexp.MustCompile(`tps = ([\d.]+)`)
	pgLat       = regexp.MustCompile(`latency average = ([\d.]+) ms`)
	pgLag       = regexp.MustCompile(`rate limit schedule lag: avg ([\d.]+) \(max ([\d.]+)\) ms`)
	pgSkipped   = regexp.MustCompile(`number of transactions skipped: (\d+)`)
	pgLate      = regexp.MustCompile(`number of transactions above the [\d.]+ ms latency limit: (\d+)`)
)

func parsePGBench(out string) (pgbenchResult, error) {
	var r pgbenchResult
	f := func(re *regexp.Regexp, i int) float64 {
		m := re.FindStringSubmatch(out)
		if m == nil {
			return 0
		}
		v, _ := strconv.ParseFloat(m[i], 64)
		return v
	}
	if pgTPS.FindStringSubmatch(out) == nil {
		return r, fmt.Errorf("pgbench printed no tps line")
	}
	r.Processed, r.Failed = int(f(pgProcessed, 1)), int(f(pgFailed, 1))
	r.TPS, r.LatAvgMS = f(pgTPS, 1), f(pgLat, 1)
	r.LagAvgMS, r.LagMaxMS = f(pgLag, 1), f(pgLag, 2)
	r.Skipped, r.Late = int(f(pgSkipped, 1)), int(f(pgLate, 1))
	return r, nil
}

// pgbenchScript returns the path of one of loadtest/bench/pgbench/*.sql.
func (b *bench) pgbenchScript(name string) string {
	return filepath.Join(b.cfg.Repo, "loadtest", "bench", "pgbench", name)
}

// pgbenchClients is the number of Postgres connections pgbench uses per
// script: the api's two replicas have 4 pooled connections each (pgxpool's
// default on 2 cores), and so do the two workers.
const pgbenchClients = 8

// pgbench runs one pgbench script on the pgbench database; extra are more
// flags (-T, -t, -R, -D ...).
func (b *bench) pgbench(ctx context.Context, name, script string, timeout time.Duration, extra ...string) (pgbenchResult, error) {
	out, err := b.command(ctx, name, timeout, b.cfg.Out, nil, b.pgbenchArgv(script, extra...)...)
	if err != nil {
		return pgbenchResult{}, err
	}
	return parsePGBench(out)
}

// pgbenchArgv is the command line of one pgbench run of script.
func (b *bench) pgbenchArgv(script string, extra ...string) []string {
	argv := append([]string{b.cfg.PGBench, "-n", "-M", "prepared", "-c", strconv.Itoa(pgbenchClients), "-j", "1",
		"-f", b.pgbenchScript(script)}, extra...)
	return append(argv, withDB(b.cfg.AdminDB, dbPGBench))
}

// seedPending inserts pending payments <prefix><client>_<k> for every
// pgbench client and k in 1..perClient, for worker_update.sql.
func (b *bench) seedPending(ctx context.Context, prefix string, perClient int) error {
	psql := filepath.Join(filepath.Dir(b.cfg.PGBench), "psql")
	if _, err := os.Stat(psql); err != nil {
		psql = "psql"
	}
	_, err := b.command(ctx, "pgbench-seed", 2*time.Minute, b.cfg.Out, nil, psql, withDB(b.cfg.AdminDB, dbPGBench),
		"-q", "-v", "ON_ERROR_STOP=1", "-v", "p="+prefix, "-v", "clients="+strconv.Itoa(pgbenchClients),
		"-v", "per_client="+strconv.Itoa(perClient), "-f", b.pgbenchScript("seed_pending.sql"))
	return err
}

// settledWithPrefix counts the rows of prefix that worker_update.sql moved.
func (b *bench) settledWithPrefix(ctx context.Context, prefix string) (int, error) {
	var n int
	err := b.cl.pg.QueryRow(ctx, `SELECT count(*) FROM payments WHERE id LIKE $1 || '%' AND status = 'succeeded'`, prefix).Scan(&n)
	return n, err
}
