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

	"github.com/oncepay/oncepay/pkg/service/pgpool"
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

	if cmd == "migrate" || cfg.MigrateOnStart {
		if err := migrate(ctx, cfg.DatabaseURL, log); err != nil {
			return err
		}
	}
	if cmd == "migrate" {
		return nil
	}
	pool, err := pgpool.New(ctx, cfg.DatabaseURL, cfg.PG)
	if err != nil {
		return fmt.Errorf("postgres pool: %w", err)
	}
	defer pool.Close()
	return serve(ctx, cfg, log, pool)
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

// serve runs the HTTP server on cfg.ListenAddr until ctx ends.
func serve(ctx context.Context, cfg config, log *slog.Logger, pool *pgxpool.Pool) error {
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
	srv := &http.Server{
		Handler: httpapi.NewServer(httpapi.Deps{
			Logger:   log,
			Store:    ledger.New(pool),
			Faults:   inj,
			Metrics:  metrics,
			Gatherer: reg,
			Draining: draining.Load,
		}),
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}

	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	log.Info("listening", "addr", ln.Addr().String(), "knobs", cfg.Knobs)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

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
