package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/page"
	"github.com/oncepay/oncepay/loadtest/record"
	"github.com/oncepay/oncepay/loadtest/timeline"
	"github.com/oncepay/oncepay/loadtest/verify"
	"github.com/oncepay/oncepay/pkg/service/dial"
)

// errViolations is returned when the report lists violations.
var errViolations = errors.New("invariants violated")

// run drains, collects, checks and reports. The report goes to stdout,
// progress to stderr. It returns errViolations when the check fails.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := loadConfig(args, getenv, stderr)
	if err != nil {
		return err
	}

	attempts, err := record.ReadFile(filepath.Join(cfg.RunDir, "records.log"))
	if err != nil {
		return err
	}
	faults, err := fault.ReadEvents(filepath.Join(cfg.RunDir, "faults.jsonl"))
	if err != nil {
		return err
	}

	db, err := pgxpool.New(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer db.Close()
	rdb, err := dial.Redis(cfg.RedisMode, cfg.RedisURL, dial.RedisTuning{ClusterAddrs: cfg.RedisAddrs})
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}
	defer rdb.Close()
	conn, err := dial.AMQP(cfg.AMQPURL, amqp.Config{}, 30*time.Second)
	if err != nil {
		return fmt.Errorf("rabbitmq: %w", err)
	}
	defer conn.Close()
	src := verify.Sources{
		DB: db, Redis: rdb, AMQP: conn,
		Queues: verify.DefaultQueues(cfg.Queue, cfg.RetryDelays),
		PSP:    verify.Ledger{URL: cfg.PSPAdminURL, Token: cfg.PSPToken},
	}

	fmt.Fprintf(stderr, "verify: run %s: %d client attempts, %d faults; draining (limit %s) ...\n", cfg.RunID, len(attempts.Attempts), len(faults), cfg.Drain)
	last := time.Now()
	drain, err := verify.Drain(ctx, src, cfg.RunID, verify.DrainConfig{Limit: cfg.Drain, Progress: func(r verify.DrainResult) {
		if time.Since(last) >= 5*time.Second {
			last = time.Now()
			fmt.Fprintf(stderr, "verify: drain %s: %d pending, %d unpublished, %d queued, %d stale boundary stages\n",
				r.Took.Round(time.Second), r.Pending, r.Unpublished, r.Queued, r.Stale)
		}
	}})
	if err != nil {
		fmt.Fprintf(stderr, "verify: drain: %v (checking what there is)\n", err)
	}
	s, err := verify.Collect(ctx, src, cfg.RunID)
	if err != nil {
		return err
	}
	s.Attempts, s.Faults, s.Drain, s.ExpectFaults = attempts.Attempts, faults, drain, cfg.Faults
	s.RequireLanded = cfg.RequireLanded
	r := verify.Check(s)
	k6 := verify.K6{Exit: cfg.K6Exit}
	if k6.Thresholds, err = verify.ReadK6Summary(filepath.Join(cfg.RunDir, "summary.json")); err != nil && cfg.K6Exit != 0 {
		fmt.Fprintf(stderr, "verify: %v\n", err)
	}
	r.AddK6(k6)
	if err := writeHistoryHTML(cfg.RunDir, &r); err != nil {
		return err
	}
	if info, err := readRunInfo(cfg.RunDir); err == nil {
		r.Repro = info.Repro
	}

	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		return err
	}
	if attempts.PartialTail {
		fmt.Fprintf(&text, "\nrecords.log ends in a partial attempt record (its writer was killed mid-write); that attempt is not checked\n")
	}
	if _, err := stdout.Write(text.Bytes()); err != nil {
		return err
	}
	if err := write(cfg.RunDir, r, text.Bytes(), s); err != nil {
		return err
	}
	logs, err := page.ReadLogs(cfg.Logs, cfg.RunID)
	if err != nil {
		fmt.Fprintf(stderr, "verify: service logs: %v (the stories go without them)\n", err)
	}
	if err := page.WriteFile(filepath.Join(cfg.RunDir, "report.html"), page.Build(r, s, logs, page.Options{Links: links(cfg.RunDir)})); err != nil {
		return fmt.Errorf("report.html: %w", err)
	}
	fmt.Fprintf(stdout, "\nreport: %s  page: %s  timeline: %s\n", filepath.Join(cfg.RunDir, "report.json"),
		filepath.Join(cfg.RunDir, "report.html"), filepath.Join(cfg.RunDir, "timeline.png"))
	if !r.Pass {
		return fmt.Errorf("%w: %d violation(s)", errViolations, len(r.Violations))
	}
	return nil
}

// links names the run's files that report.html links to, those that exist.
func links(dir string) []page.Link {
	var out []page.Link
	for _, f := range []struct{ name, file string }{
		{"k6's report", "k6-report.html"}, {"report.txt", "report.txt"}, {"report.json", "report.json"},
		{"timeline.png", "timeline.png"}, {"k6 summary", "summary.json"}, {"histories (porcupine)", historyHTML},
		{"records.log", "records.log"}, {"faults.jsonl", "faults.jsonl"},
	} {
		if _, err := os.Stat(filepath.Join(dir, f.file)); err == nil {
			out = append(out, page.Link{Name: f.name, Href: f.file})
		}
	}
	return out
}

// historyHTML is porcupine's visualization of the violating keys, in the
// run directory.
const historyHTML = "history.html"

// writeHistoryHTML writes history.html with the keys that violate
// invariant 7 and names it in r, or removes a previous one when none does.
func writeHistoryHTML(dir string, r *verify.Report) error {
	path := filepath.Join(dir, historyHTML)
	var b bytes.Buffer
	wrote, err := r.History.WriteHTML(&b, 0)
	if err != nil {
		return fmt.Errorf("history.html: %w", err)
	}
	if !wrote {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	r.History.HTML = path
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// write stores the report as JSON and text, and the timeline as PNG.
func write(dir string, r verify.Report, text []byte, s verify.Snapshot) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.txt"), text, 0o644); err != nil {
		return err
	}
	var settled []time.Time
	for _, p := range s.Payments {
		if p.Status != "pending" {
			settled = append(settled, p.UpdatedAt)
		}
	}
	var markers []timeline.Marker
	for _, f := range r.Faults {
		label := string(f.Action) + " " + f.Target // kill api-1, pause worker-2
		if replica := strings.HasPrefix(f.Target, "api-") || strings.HasPrefix(f.Target, "worker-"); !replica && f.Kind != "" {
			label = f.Kind // kill-postgres, psp-outage
		}
		markers = append(markers, timeline.Marker{At: f.At, Label: label, Kind: string(f.Action)})
	}
	verdict := "PASS"
	if n := len(r.Violations); n == 1 {
		verdict = "FAIL, 1 violation"
	} else if n > 1 {
		verdict = fmt.Sprintf("FAIL, %d violations", n)
	}
	title := fmt.Sprintf("oncepay fault test %s: %s · %d cut off in flight · %d lease takeovers", r.RunID, verdict, r.Requests.CutOff, len(r.Takeovers))
	var png bytes.Buffer
	if err := timeline.Render(&png, timeline.Build(r.Start, s.Attempts, settled), markers, title, 12*timeline.Inch, 5*timeline.Inch); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "timeline.png"), png.Bytes(), 0o644)
}
