package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncepay/oncepay/pkg/service"
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

	cmd, err := service.Command(args, stderr, usage, "serve", "migrate")
	if err != nil {
		return err
	}
	cfg, err := loadConfig(getenv, time.Now())
	if err != nil {
		return err
	}
	log := service.NewLogger(stdout, cfg.LogLevel, "psp", "")

	if cmd == "migrate" || cfg.MigrateOnStart {
		if err := migrate(ctx, cfg.DatabaseURL, log); err != nil {
			return err
		}
	}
	if cmd == "migrate" {
		return nil
	}
	tr, err := trace.Setup(ctx, "psp", "", getenv)
	if err != nil {
		return err
	}
	defer tr.ShutdownWithin(ctx, 5*time.Second, log)
	return serve(ctx, cfg, tr, log)
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

// serve runs the charges listener on cfg.ListenAddr, the ops listener on
// cfg.OpsAddr and, when cfg.AdminAddr is set, the admin listener there as a
// service.Service, until ctx ends; in-flight requests drain within
// PSP_SHUTDOWN_GRACE.
func serve(ctx context.Context, cfg config, tr *trace.Tracing, log *slog.Logger) error {
	inj, err := faults.New(cfg.Knobs)
	if err != nil {
		return err
	}
	reg := service.NewRegistry()
	metrics, err := httpapi.NewMetrics(reg)
	if err != nil {
		return err
	}
	svc, err := service.New(log, reg, service.Config{OpsAddr: cfg.OpsAddr, ShutdownGrace: cfg.ShutdownGrace})
	if err != nil {
		return err
	}
	defer svc.Close()
	charges, err := svc.Listen("addr", cfg.ListenAddr)
	if err != nil {
		return err
	}
	var admin *http.Server
	if cfg.AdminAddr != "" {
		if admin, err = svc.Listen("admin_addr", cfg.AdminAddr); err != nil {
			return err
		}
	}
	pool, err := svc.Postgres(ctx, cfg.DatabaseURL, cfg.PG, tr.Postgres)
	if err != nil {
		return err
	}

	deps := httpapi.Deps{Logger: log, Store: ledger.New(pool), Faults: inj, Metrics: metrics}
	charges.Handler = tr.Handler(httpapi.NewServer(deps), "psp")
	if admin != nil {
		admin.Handler = httpapi.NewAdminServer(deps, cfg.AdminToken)
	}
	log.Info("knobs", "knobs", cfg.Knobs)
	return svc.Run(ctx)
}
