package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/oncepay/oncepay/pkg/service/httpserver"
	"github.com/oncepay/oncepay/pkg/service/ops"
	"github.com/oncepay/oncepay/pkg/service/pgpool"
	"github.com/oncepay/oncepay/pkg/service/trace"
	"github.com/oncepay/oncepay/services/psp/internal/faults"
	"github.com/oncepay/oncepay/services/psp/internal/httpapi"
	"github.com/oncepay/oncepay/services/psp/internal/ledger"
	"github.com/oncepay/oncepay/services/psp/migrations"
)

const usage = "usage: psp [serve|migrate]"

// run is the whole program: it reads the configuration through getenv,
// writes JSON logs to stdout and the usage text to stderr, and, for serve,
// serves HTTP until ctx ends or SIGINT/SIGTERM arrives, then drains
// in-flight requests within PSP_SHUTDOWN_GRACE. It returns nil after a clean
// shutdown.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	cmd := "serve"
	if len(args) > 1 {
		cmd = args[1]
	}
	if len(args) > 2 || (cmd != "serve" && cmd != "migrate") {
		fmt.Fprintln(stderr, usage)
		return fmt.Errorf("bad arguments %q", args[1:])
	}
	cfg, err := loadConfig(getenv, time.Now())
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	tr, err := trace.Setup(ctx, "psp", "", getenv)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tr.Shutdown(sctx); err != nil {
			log.Warn("tracing: spans not exported", "err", err)
		}
	}()

	if cmd == "migrate" || cfg.MigrateOnStart {
		if err := migrate(ctx, cfg.DatabaseURL, log); err != nil {
			return err
		}
	}
	if cmd == "migrate" {
		return nil
	}
	pool, err := pgpool.New(ctx, cfg.DatabaseURL, cfg.PG, tr.Postgres)
	if err != nil {
		return fmt.Errorf("postgres pool: %w", err)
	}
	defer pool.Close()
	return serve(ctx, cfg, tr, log, pool)
}

// migrate applies the migrations on a pool of its own, without the serving
// timeouts: a migration may run long, or wait for another replica's.
func migrate(ctx context.Context, databaseURL string, log *slog.Logger) error {
	pool, err := pgxpool.New(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("postgres pool: %w", err)
	}
	defer pool.Close()
	_, err = migrations.Apply(ctx, pool, log)
	return err
}

// serve runs the charges server on cfg.ListenAddr, the ops server on
// cfg.OpsAddr and, when cfg.AdminAddr is set, the admin server there, until
// ctx ends.
func serve(ctx context.Context, cfg config, tr *trace.Tracing, log *slog.Logger, pool *pgxpool.Pool) error {
	inj, err := faults.New(cfg.Knobs)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics, err := httpapi.NewMetrics(reg)
	if err != nil {
		return err
	}
	var draining atomic.Bool
	deps := httpapi.Deps{
		Logger:  log,
		Store:   ledger.New(pool),
		Faults:  inj,
		Metrics: metrics,
	}
	srv := httpserver.New(tr.Handler(httpapi.NewServer(deps), "psp"), log)
	opsSrv := httpserver.New(ops.NewHandler(ops.Deps{
		Log:      log.With("component", "ops"),
		Checks:   []ops.Check{{Name: "postgres", Required: true, Fn: pool.Ping}},
		Gatherer: reg,
		Draining: draining.Load,
	}), log)

	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	opsLn, err := net.Listen("tcp", cfg.OpsAddr)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("listen (ops): %w", err)
	}
	defer opsSrv.Close()
	served := make(chan error, 3)
	adminAddr := ""
	if cfg.AdminAddr != "" {
		adminLn, err := net.Listen("tcp", cfg.AdminAddr)
		if err != nil {
			_ = ln.Close()
			_ = opsLn.Close()
			return fmt.Errorf("listen (admin): %w", err)
		}
		adminSrv := httpserver.New(httpapi.NewAdminServer(deps, cfg.AdminToken), log)
		defer adminSrv.Close()
		adminAddr = adminLn.Addr().String()
		go func() { served <- adminSrv.Serve(adminLn) }()
	}
	log.Info("listening", "addr", ln.Addr().String(), "ops_addr", opsLn.Addr().String(), "admin_addr", adminAddr, "knobs", cfg.Knobs)
	go func() { served <- srv.Serve(ln) }()
	go func() { served <- opsSrv.Serve(opsLn) }()

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	draining.Store(true)
	log.Info("shutting down", "grace", cfg.ShutdownGrace.String())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("stopped")
	return nil
}
