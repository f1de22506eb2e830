package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"

	"github.com/oncepay/oncepay/services/psp/pspclient"
)

// logSink collects run's JSON log lines and reports the address it listens on.
type logSink struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	addrs chan [3]string // the charges, the ops and the admin address
}

func newLogSink() *logSink { return &logSink{addrs: make(chan [3]string, 1)} }

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var rec struct {
		Msg, Addr string
		OpsAddr   string `json:"ops_addr"`
		AdminAddr string `json:"admin_addr"`
	}
	if json.Unmarshal(p, &rec) == nil && rec.Msg == "listening" {
		l.addrs <- [3]string{rec.Addr, rec.OpsAddr, rec.AdminAddr}
	}
	return l.buf.Write(p)
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// urls are the base URLs of a running psp's listeners.
type urls struct{ base, ops, admin string }

// startRun runs the program with vars until the test ends, and returns its
// base URLs once /readyz answers 200, and a channel with run's result.
func startRun(t *testing.T, ctx context.Context, vars map[string]string) (urls, <-chan error) {
	t.Helper()
	var u urls
	logs := newLogSink()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"psp"}, env(vars), logs, logs) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("psp logs:\n%s", logs)
		}
	})

	select {
	case addrs := <-logs.addrs:
		u = urls{base: "http://" + addrs[0], ops: "http://" + addrs[1], admin: "http://" + addrs[2]}
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("run never logged listening")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(u.ops + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return u, done
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never answered 200: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const testAdminToken = "test-admin-token-0123456789"

func baseVars(t *testing.T) map[string]string {
	t.Helper()
	return map[string]string{
		"PSP_LISTEN_ADDR":  "127.0.0.1:0",
		"PSP_OPS_ADDR":     "127.0.0.1:0",
		"PSP_ADMIN_ADDR":   "127.0.0.1:0",
		"PSP_ADMIN_TOKEN":  testAdminToken,
		"PSP_DATABASE_URL": testenv.NewDatabase(t),
		"PSP_LATENCY":      "0s",
		"PSP_SEED":         "1",
	}
}

func wantStopped(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run = %v, want a clean stop", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after shutdown began")
	}
}

// The tests in this file do not call t.Parallel: TestRunDrainsOnSIGTERM
// signals the whole test process.

func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	u, done := startRun(t, ctx, baseVars(t))

	c := pspclient.New(u.base, nil)
	ch, err := c.Charge(ctx, "run-key", pspclient.ChargeRequest{Amount: 10, Currency: "EUR", CustomerID: "c", Reference: "pay_run"})
	if err != nil || ch.Status != pspclient.StatusSucceeded {
		t.Fatalf("charge = %+v, %v", ch, err)
	}
	cfg, err := pspclient.NewAdmin(u.admin, testAdminToken, nil).Config(ctx)
	if err != nil || cfg.Seed != 1 || cfg.LatencyMS != 0 || !cfg.Idempotency {
		t.Errorf("config = %+v, %v; want the env's seed 1, latency 0, idempotency on", cfg, err)
	}
	var perr *pspclient.Error
	if _, err := c.Config(ctx); !errors.As(err, &perr) || perr.StatusCode != http.StatusNotFound {
		t.Errorf("config on the charges port: %v, want 404", err)
	}
	if _, err := pspclient.NewAdmin(u.admin, "not-"+testAdminToken, nil).Config(ctx); !errors.As(err, &perr) || perr.StatusCode != http.StatusUnauthorized {
		t.Errorf("config with a wrong token: %v, want 401", err)
	}
	resp, err := http.Get(u.ops + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"psp_charges_total 1", "go_goroutines", "process_cpu_seconds_total"} {
		if !strings.Contains(body.String(), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	cancel()
	wantStopped(t, done)
}

func TestRunDrainsOnSIGTERM(t *testing.T) {
	vars := baseVars(t)
	vars["PSP_LATENCY"] = "600ms"
	vars["PSP_LATENCY_JITTER"] = "0s"
	u, done := startRun(t, t.Context(), vars)

	type result struct {
		ch  pspclient.Charge
		err error
	}
	inflight := make(chan result, 1)
	go func() {
		ch, err := pspclient.New(u.base, nil).Charge(context.Background(), "drain-key",
			pspclient.ChargeRequest{Amount: 10, Currency: "EUR", CustomerID: "c", Reference: "pay_drain"})
		inflight <- result{ch, err}
	}()
	time.Sleep(150 * time.Millisecond) // the charge is now sleeping its latency
	// The test signals itself, not a child: run, in this process, must
	// drain on the SIGTERM a supervisor sends. internal/proc has no part here.
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}

	r := <-inflight
	if r.err != nil || r.ch.Status != pspclient.StatusSucceeded {
		t.Errorf("in-flight charge during shutdown = %+v, %v; want it answered", r.ch, r.err)
	}
	wantStopped(t, done)
	if _, err := http.Get(u.ops + "/livez"); err == nil {
		t.Error("still serving after run returned")
	}
}

func TestRunMigrate(t *testing.T) {
	vars := baseVars(t)
	logs := newLogSink()
	if err := run(t.Context(), []string{"psp", "migrate"}, env(vars), logs, logs); err != nil {
		t.Fatalf("migrate: %v\n%s", err, logs)
	}
	if !strings.Contains(logs.String(), "0001_ledger.sql") {
		t.Errorf("migrate logged no migration:\n%s", logs)
	}
	if strings.Contains(logs.String(), "listening") {
		t.Error("migrate started serving")
	}
	logs = newLogSink()
	if err := run(t.Context(), []string{"psp", "migrate"}, env(vars), logs, logs); err != nil || strings.Contains(logs.String(), "migration applied") {
		t.Errorf("second migrate = %v, logs:\n%s\nwant nothing applied", err, logs)
	}
}

func TestRunRejectsBadArgumentsAndConfig(t *testing.T) {
	var stderr bytes.Buffer
	err := run(t.Context(), []string{"psp", "charge-everyone"}, env(nil), &bytes.Buffer{}, &stderr)
	if err == nil || !strings.Contains(stderr.String(), "usage: psp") {
		t.Errorf("bad subcommand: err = %v, stderr %q; want an error and the usage", err, stderr.String())
	}
	err = run(t.Context(), []string{"psp"}, env(map[string]string{"PSP_ERROR_RATE": "3"}), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "PSP_DATABASE_URL is required") || !strings.Contains(err.Error(), "PSP_ERROR_RATE") {
		t.Errorf("bad config: err = %v, want both problems", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Error("bad config reported as cancellation")
	}
}
