package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/oncepay/oncepay/loadtest/compare"
	"github.com/oncepay/oncepay/loadtest/record"
	"github.com/oncepay/oncepay/loadtest/verify"
	"github.com/oncepay/oncepay/pkg/idem/naive"
)

// run runs the experiment once per strategy (unless -report-only), then
// writes and prints the table. Progress and the runs' own output go to
// stderr, the table to stdout. The runtime is left up, running oncepay
// with the psp's faults off, whatever happened.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := loadConfig(args, getenv, os.ReadFile, stderr)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return err
	}
	if !cfg.ReportOnly {
		rt := runtime{repo: cfg.Repo, log: stderr, topology: cfg.Topology, localDir: cfg.LocalDir}
		afterPostgres := false // the runtime runs a Postgres row's cluster
		defer func() { restore(rt, cfg, afterPostgres, stderr) }()
		for i, r := range cfg.Rows {
			what := fmt.Sprintf("%s load at %d/s", cfg.Duration, cfg.Rate)
			if r.Postgres != nil {
				what = fmt.Sprintf("oncepay on TOPOLOGY=ha, Postgres under %s, faults %s, load at %d/s",
					r.Postgres.Label(), strings.Join(compare.PostgresKinds, ","), cfg.Rate)
			}
			fmt.Fprintf(stderr, "\n==> compare %d/%d: %s (%s, seed %d, psp fail_after %.3f)\n",
				i+1, len(cfg.Rows), r.Name, what, cfg.Seed, cfg.PSPFailAfter)
			// a Postgres row starts from a cluster bootstrapped with its
			// replication; a strategy after one from the runtime's topology
			if r.Postgres != nil || afterPostgres {
				fmt.Fprintln(stderr, "==> compare: stopping the local runtime and deleting its Patroni state")
				if err := rt.fresh(ctx); err != nil {
					return fmt.Errorf("%s: %w", r.Name, err)
				}
			}
			afterPostgres = r.Postgres != nil
			if err := runOne(ctx, rt, cfg, r); err != nil {
				return fmt.Errorf("%s: %w", r.Name, err)
			}
		}
	}
	rows, err := summarize(cfg)
	if err != nil {
		return err
	}
	return write(cfg, rows, stdout)
}

// runOne restarts the api and workers for r, resets the state and runs the
// experiment into <out>/<r.Name>.
func runOne(ctx context.Context, rt runtime, cfg config, r row) error {
	s := r.Strategy
	start := time.Now()
	if c, err := net.DialTimeout("tcp", cfg.FaultdAddr, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("a fault driver already listens on %s: another fault run is using the local runtime; wait for it to end", cfg.FaultdAddr)
	}
	if err := rt.up(ctx, r); err != nil {
		return err
	}
	if err := checkStrategy(ctx, cfg.Ready, s, 90*time.Second); err != nil {
		return err
	}
	env, err := rt.env(ctx)
	if err != nil {
		return err
	}
	svc, err := servicesOf(env)
	if err != nil {
		return err
	}
	if err := reset(ctx, svc, cfg.PSPFailAfter, cfg.Seed); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	dir := filepath.Join(cfg.Out, r.Name)
	var rep verify.Report
	for attempt := 1; ; attempt++ {
		// A run that fails before its verifier leaves no report: never read
		// the previous run's.
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := rt.chaos(ctx, r, dir, cfg); err != nil {
			return err
		}
		if rep, err = readReport(dir); err == nil {
			break
		}
		if attempt == 2 {
			return fmt.Errorf("the run left no report twice (see %s and the output above): %w", dir, err)
		}
		fmt.Fprintf(rt.log, "==> %s: the run left no report (%v); running it again in 10s\n", r.Name, err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
		}
	}
	n, err := markersLeft(ctx, svc, rep.RunID)
	if err != nil {
		return fmt.Errorf("count markers: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "markers_left"), []byte(strconv.Itoa(n)+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(rt.log, "==> %s done in %s: %d violation(s), %d marker(s) left\n", r.Name, time.Since(start).Round(time.Second), len(rep.Violations), n)
	return nil
}

// restore leaves the runtime as make up would: oncepay on the strategies'
// topology, no psp faults; after a Postgres row, with that row's cluster
// stopped and its state deleted first.
func restore(rt runtime, cfg config, afterPostgres bool, stderr io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	fmt.Fprintf(stderr, "\n==> compare: restoring the local runtime to oncepay on TOPOLOGY=%s, psp faults off\n", rt.topology)
	if afterPostgres {
		if err := rt.fresh(ctx); err != nil {
			fmt.Fprintf(stderr, "compare: restore: %v\n", err)
		}
	}
	if err := rt.up(ctx, row{Name: string(naive.StrategyOncepay), Strategy: naive.StrategyOncepay}); err != nil {
		fmt.Fprintf(stderr, "compare: restore: %v\n", err)
	}
	env, err := rt.env(ctx)
	if err == nil {
		var svc services
		if svc, err = servicesOf(env); err == nil {
			err = pspFaults(ctx, svc, 0, cfg.Seed)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "compare: restore psp: %v\n", err)
	}
}

// summarize builds a row per strategy from the runs in cfg.Out. A row's
// load lasted its run.json's duration (a Postgres row's plan sets its
// own), else cfg.Duration.
func summarize(cfg config) ([]compare.Row, error) {
	var rows []compare.Row
	for _, row := range cfg.Rows {
		dir := filepath.Join(cfg.Out, row.Name)
		r, err := readReport(dir)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", row.Name, err)
		}
		l, err := record.ReadFile(filepath.Join(dir, "records.log"))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", row.Name, err)
		}
		markers := 0
		if b, err := os.ReadFile(filepath.Join(dir, "markers_left")); err == nil {
			markers, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		rows = append(rows, compare.Summarize(row.Name, r, l.Attempts, markers, loadDuration(dir, cfg.Duration)))
	}
	return rows, nil
}

// loadDuration reads the load's duration from dir/run.json; def when it
// cannot.
func loadDuration(dir string, def time.Duration) time.Duration {
	var info struct {
		Duration string `json:"duration"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil || json.Unmarshal(b, &info) != nil {
		return def
	}
	if d, err := time.ParseDuration(info.Duration); err == nil && d > 0 {
		return d
	}
	return def
}

func readReport(dir string) (verify.Report, error) {
	var r verify.Report
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", filepath.Join(dir, "report.json"), err)
	}
	if r.RunID == "" {
		return r, errors.New("report.json has no run id")
	}
	return r, nil
}

// write prints the table and details and stores them with the chart.
func write(cfg config, rows []compare.Row, stdout io.Writer) error {
	var text, md bytes.Buffer
	fmt.Fprintf(&text, "oncepay compare: the same faults against every strategy (%s at %d/s, seed %d, psp fail_after %.3f)\n\n",
		cfg.Duration, cfg.Rate, cfg.Seed, cfg.PSPFailAfter)
	for _, r := range cfg.Rows {
		if r.Postgres != nil {
			fmt.Fprintf(&text, "The Postgres rows run oncepay on TOPOLOGY=ha, Postgres under Patroni, under these faults instead: %s\n"+
				"(failover-postgres-lagged: the leader's replication stream held 2s under load, then its host killed).\n\n", strings.Join(compare.PostgresKinds, ", "))
			break
		}
	}
	if err := compare.WriteText(&text, rows); err != nil {
		return err
	}
	text.WriteString("\nwhat the verifier found, by kind:\n")
	if err := compare.WriteDetails(&text, rows); err != nil {
		return err
	}
	text.WriteString("\nwhat each variable changes (rows that differ in one variable only):\n")
	if err := compare.WriteContrasts(&text, rows); err != nil {
		return err
	}
	text.WriteString("\n\"not caught this run\" is not \"safe\": one run samples the failure windows, it does not cover them.\n")
	if err := compare.WriteMarkdown(&md, rows); err != nil {
		return err
	}
	md.WriteString("\n")
	if err := compare.WriteDetails(&md, rows); err != nil {
		return err
	}
	md.WriteString("\nWhat each variable changes (rows that differ in one variable only):\n\n")
	if err := compare.WriteContrasts(&md, rows); err != nil {
		return err
	}
	var png bytes.Buffer
	title := fmt.Sprintf("same faults, same seed: violations per strategy (%s at %d/s, seed %d)", cfg.Duration, cfg.Rate, cfg.Seed)
	if err := compare.Chart(&png, rows, title, 10*72, 4.5*72); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	for name, b := range map[string][]byte{"compare.txt": text.Bytes(), "compare.md": md.Bytes(), "compare.png": png.Bytes(), "compare.json": append(js, '\n')} {
		if err := os.WriteFile(filepath.Join(cfg.Out, name), b, 0o644); err != nil {
			return err
		}
	}
	if err := writePage(cfg, rows); err != nil {
		return fmt.Errorf("report.html: %w", err)
	}
	if _, err := stdout.Write(text.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\ntable: %s  chart: %s  page: %s\n", filepath.Join(cfg.Out, "compare.md"), filepath.Join(cfg.Out, "compare.png"), filepath.Join(cfg.Out, "report.html"))
	return nil
}
