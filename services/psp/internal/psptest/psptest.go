// Package psptest starts a real psp for tests: the charges and the admin
// handlers on httptest servers of their own (the admin one with a random
// token), backed by a fresh Postgres database of its own from the
// harness (internal/testenv), migrated, and torn down at cleanup.
package psptest

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oncepay/oncepay/pkg/service/ops"
	"github.com/oncepay/oncepay/services/psp/internal/faults"
	"github.com/oncepay/oncepay/services/psp/internal/httpapi"
	"github.com/oncepay/oncepay/services/psp/internal/ledger"
	"github.com/oncepay/oncepay/services/psp/migrations"
)

// Server is a running psp.
type Server struct {
	URL        string           // base URL, e.g. http://127.0.0.1:41234 (charges)
	AdminURL   string           // the admin listener's base URL (/admin/*)
	AdminToken string           // the bearer token the admin listener wants
	OpsURL     string           // the ops listener's base URL (/livez, /readyz, /metrics)
	Pool       *pgxpool.Pool    // the psp's database, for direct checks
	Faults     *faults.Injector // the knobs, to change them without HTTP
	Registry   *prometheus.Registry
	Draining   atomic.Bool // set it to make /readyz answer 503
}

// Knobs are quiet test defaults: no latency, no faults, idempotency on, seed 1.
func Knobs() faults.Knobs {
	return faults.Knobs{Idempotency: true, Seed: 1}
}

// Start runs a psp with knobs k until the test ends. It fails the test, with
// a hint, when the harness Postgres is not reachable.
func Start(t testing.TB, k faults.Knobs) *Server {
	t.Helper()
	url := testenv.NewDatabase(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	t.Cleanup(pool.Close) // registered before the server's Close, so it runs after it
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	if _, err := migrations.Apply(ctx, pool, log); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	inj, err := faults.New(k)
	if err != nil {
		t.Fatalf("faults: %v", err)
	}
	reg := prometheus.NewRegistry()
	m, err := httpapi.NewMetrics(reg)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	s := &Server{Pool: pool, Faults: inj, Registry: reg}
	hs := httptest.NewServer(httpapi.NewServer(httpapi.Deps{
		Logger:  log,
		Store:   ledger.New(pool),
		Faults:  inj,
		Metrics: m,
	}))
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	s.AdminToken = rand.Text()
	adminHS := httptest.NewServer(httpapi.NewAdminServer(httpapi.Deps{
		Logger:  log,
		Store:   ledger.New(pool),
		Faults:  inj,
		Metrics: m,
	}, s.AdminToken))
	t.Cleanup(adminHS.Close)
	s.AdminURL = adminHS.URL
	opsHS := httptest.NewServer(ops.NewHandler(ops.Deps{
		Log:      log,
		Checks:   []ops.Check{{Name: "postgres", Required: true, Fn: pool.Ping}},
		Gatherer: reg,
		Draining: s.Draining.Load,
	}))
	t.Cleanup(opsHS.Close)
	s.OpsURL = opsHS.URL
	return s
}
