package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncepay/oncepay/pkg/service"
	"github.com/oncepay/oncepay/pkg/service/trace"
	"github.com/oncepay/oncepay/services/api/internal/config"
	"github.com/oncepay/oncepay/services/api/migrations"
)

const usage = "usage: api [serve|migrate]"

// run is the whole program. It reads the configuration through getenv,
// writes JSON logs to stdout and usage errors to stderr. `serve` (the
// default) serves until ctx ends or SIGINT/SIGTERM arrives, then shuts down
// within SHUTDOWN_GRACE and returns nil; `migrate` applies the migrations
// and returns. A configuration error lists every problem at once.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	cmd, err := service.Command(args, stderr, usage, "serve", "migrate")
	if err != nil {
		return err
	}
	hostname, _ := os.Hostname()

	if cmd == "migrate" {
		cfg, err := config.LoadMigrate(getenv, hostname)
		if err != nil {
			return err
		}
		return migrate(ctx, cfg.DatabaseURL, service.NewLogger(stdout, cfg.LogLevel, "api", cfg.Instance))
	}
	cfg, err := config.LoadServe(getenv, hostname)
	if err != nil {
		return err
	}
	if err := checkStrategy(cfg.IdemStrategy); err != nil {
		return err
	}
	log := service.NewLogger(stdout, cfg.LogLevel, "api", cfg.Instance)
	tr, err := trace.Setup(ctx, "api", cfg.Instance, getenv)
	if err != nil {
		return err
	}
	defer tr.ShutdownWithin(ctx, 5*time.Second, log)
	return serve(ctx, cfg, tr, log)
}

// migrate applies the embedded migrations; several replicas may run it at
// once (migrations.Apply holds an advisory lock).
func migrate(ctx context.Context, databaseURL string, log *slog.Logger) error {
	pool, err := pgxpool.New(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("postgres pool: %w", err)
	}
	defer pool.Close()
	applied, err := migrations.Apply(ctx, pool)
	if err != nil {
		return err
	}
	log.Info("migrations applied", "versions", applied)
	return nil
}
