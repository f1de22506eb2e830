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

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/pkg/service/pgpool"
	"github.com/oncepay/oncepay/pkg/service/pprofserve"
	"github.com/oncepay/oncepay/pkg/service/trace"
	"github.com/oncepay/oncepay/services/psp/pspclient"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/oncepay/oncepay/services/worker/internal/broker"
	"github.com/oncepay/oncepay/services/worker/internal/charge"
	"github.com/oncepay/oncepay/services/worker/internal/consumer"
	"github.com/oncepay/oncepay/services/worker/internal/metrics"
	"github.com/oncepay/oncepay/services/worker/internal/ops"
	"github.com/oncepay/oncepay/services/worker/internal/payments"
	"github.com/oncepay/oncepay/services/worker/internal/reconcile"
)

const usage = "usage: worker   (configured by the environment, see docs/worker.md)"

// run is the whole program. It reads the configuration through getenv,
// writes JSON logs to stdout and the usage text to stderr, consumes until
// ctx ends or SIGINT/SIGTERM arrives, then shuts down within SHUTDOWN_GRACE:
// the consumer is cancelled, in-flight messages finish (or are left unacked
// for redelivery), connections close. It returns nil after a clean shutdown
// and an error when it cannot start or loses a dependency for good.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) > 1 {
		fmt.Fprintln(stderr, usage)
		return fmt.Errorf("unexpected arguments %q", args[1:])
	}
	host, _ := os.Hostname()
	cfg, err := loadConfig(getenv, host)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: cfg.LogLevel})).
		With("service", "worker", "instance", cfg.Instance)
	tr, err := trace.Setup(ctx, "worker", cfg.Instance, getenv)
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

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := metrics.New(reg)
	if err != nil {
		return err
	}

	ropt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}
	ropt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(ropt)
	defer rdb.Close()
	if err := tr.Redis(rdb); err != nil {
		return err
	}
	idemCfg := idem.Config{Lease: cfg.Lease, Retention: cfg.Retention, Timeout: cfg.IdemTimeout, Observe: m.Boundary}
	store := idem.New(rdb, idemCfg)
	boundary, pspKey := charge.IdemBoundary(store), charge.PSPKey
	var details map[string]string
	if !cfg.Strategy.Real() { // a demonstration strategy: see strategy.go
		boundary, pspKey = comparison(cfg.Strategy, boundary, rdb, idemCfg)
		details = map[string]string{"idempotency_strategy": string(cfg.Strategy), "warning": cfg.Strategy.Warning()}
		go warnLoudly(ctx, log, cfg.Strategy, time.Minute)
	}

	pool, err := pgpool.New(ctx, cfg.DatabaseURL, cfg.PG, tr.Postgres)
	if err != nil {
		return fmt.Errorf("postgres pool: %w", err)
	}
	defer pool.Close()
	pays := payments.New(pool)

	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = cfg.Concurrency
	psp := pspclient.New(cfg.PSPURL, &http.Client{Transport: tr.Transport(transport)})

	conn, err := broker.Dial(cfg.AMQPURL, broker.DialConfig{
		Name: "oncepay-worker " + cfg.Instance, RetryInterval: cfg.ReconnectInterval,
		MaxRetries: cfg.ReconnectAttempts, Log: log,
	})
	if err != nil {
		return err
	}
	defer conn.Close()
	topo := broker.Topology{
		Topology:    message.Topology{Exchange: cfg.Exchange, Queue: cfg.Queue, DeliveryLimit: cfg.DeliveryLimit},
		RetryDelays: cfg.RetryDelays,
	}
	cons, err := conn.Consume(topo, cfg.Prefetch, "worker-"+cfg.Instance)
	if err != nil {
		return err
	}
	defer cons.Channel.Close()

	handler := charge.NewHandler(charge.Deps{
		Boundary: boundary, PSPKey: pspKey, Payments: pays, PSP: psp, PSPTimeout: cfg.PSPTimeout,
		EndRetry: cfg.EndRetry, MaxHold: cfg.MaxHold, Instance: cfg.Instance, Log: log, Metrics: m,
	})
	loop := consumer.New(loopConfig(cfg, topo), consumer.Deps{
		Handler: handler, Channel: cons, Publisher: cons.Publisher, Guard: cons.Guard, Log: log, Metrics: m,
	})
	rm, err := reconcile.NewMetrics(reg)
	if err != nil {
		return err
	}
	reconciler := reconcile.New(reconcile.Config{
		After: cfg.ReconcileAfter, Interval: cfg.ReconcileInterval, Batch: cfg.ReconcileBatch,
		PSPTimeout: cfg.PSPTimeout, MeasureOnly: !cfg.Strategy.Real(),
	}, reconcile.Deps{Boundary: boundary, Payments: pays, PSP: psp, Charger: handler, Log: log, Metrics: rm})

	var draining, consuming atomic.Bool
	srv := &http.Server{
		Handler: ops.NewServer(ops.Deps{
			Log: log, Gatherer: reg, Draining: draining.Load, Details: details,
			Checks: []ops.Check{
				{Name: "redis", Fn: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
				{Name: "postgres", Fn: pays.Ping},
				{Name: "amqp", Fn: func(context.Context) error {
					if !conn.Open() || !cons.Alive() || !consuming.Load() {
						return errors.New("consumer not running (connection recovering or closed)")
					}
					return nil
				}},
			},
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if cfg.PprofAddr != "" {
		go pprofserve.Serve(ctx, cfg.PprofAddr, "WORKER_PPROF_ADDR", log)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String(), "queue", cfg.Queue, "exchange", cfg.Exchange,
		"prefetch", cfg.Prefetch, "concurrency", cfg.Concurrency, "lease", cfg.Lease.String())

	loopCtx, stopLoop := context.WithCancel(ctx)
	defer stopLoop()
	looped := make(chan error, 1)
	consuming.Store(true)
	go func() {
		looped <- loop.Run(loopCtx, cons.Deliveries)
		consuming.Store(false)
	}()
	reconciled := make(chan struct{})
	go func() {
		defer close(reconciled)
		reconciler.Run(loopCtx)
	}()

	var runErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down", "grace", cfg.ShutdownGrace.String())
	case err := <-conn.Dead():
		runErr = err
	case err := <-looped:
		looped <- err
		runErr = fmt.Errorf("consumer stopped: %w", err)
	case err := <-served:
		runErr = fmt.Errorf("ops server: %w", err)
	}
	if runErr != nil {
		log.Error("stopping", "err", runErr)
	}
	draining.Store(true)
	stopLoop()
	if err := <-looped; err != nil && runErr == nil {
		runErr = fmt.Errorf("consumer: %w", err)
	}
	<-reconciled
	// Closing the channel returns every delivery not settled to the queue.
	if err := cons.Channel.Close(); err != nil {
		log.Warn("close amqp channel", "err", err)
	}
	if err := conn.Close(); err != nil {
		log.Warn("close amqp connection", "err", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	log.Info("stopped", "err", runErr)
	return runErr
}

// loopConfig derives the consumer loop's settings from cfg and the topology.
func loopConfig(cfg config, t broker.Topology) consumer.Config {
	c := consumer.Config{
		Concurrency: cfg.Concurrency, DeadLetter: t.DeadLetterQueue(),
		Grace: cfg.ShutdownGrace, PublishTimeout: 5 * time.Second,
	}
	for i, d := range cfg.RetryDelays {
		c.Retries = append(c.Retries, consumer.RetryQueue{Queue: t.RetryQueue(i), Delay: d})
	}
	return c
}
