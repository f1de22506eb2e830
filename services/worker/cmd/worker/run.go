package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemstage"
	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/pkg/service"
	"github.com/oncepay/oncepay/pkg/service/dial"
	"github.com/oncepay/oncepay/pkg/service/ops"
	"github.com/oncepay/oncepay/pkg/service/trace"
	"github.com/oncepay/oncepay/services/psp/pspclient"

	"github.com/oncepay/oncepay/services/worker/internal/broker"
	"github.com/oncepay/oncepay/services/worker/internal/charge"
	"github.com/oncepay/oncepay/services/worker/internal/consumer"
	"github.com/oncepay/oncepay/services/worker/internal/metrics"
	"github.com/oncepay/oncepay/services/worker/internal/payments"
	"github.com/oncepay/oncepay/services/worker/internal/reconcile"
)

const usage = "usage: worker [serve]   (configured by the environment, see docs/worker.md)"

// run is the whole program. It reads the configuration through getenv,
// writes JSON logs to stdout and the usage text to stderr, consumes until
// ctx ends or SIGINT/SIGTERM arrives, then shuts down within SHUTDOWN_GRACE:
// /readyz turns 503, the consumer is cancelled, in-flight messages finish
// (or are left unacked for redelivery), connections close, in the order of
// service.Service.Run. It returns nil after a clean shutdown
// and an error when it cannot start or loses a dependency for good.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := service.Command(args, stderr, usage, "serve"); err != nil {
		return err
	}
	host, _ := os.Hostname()
	cfg, err := loadConfig(getenv, host)
	if err != nil {
		return err
	}
	log := service.NewLogger(stdout, cfg.LogLevel, "worker", cfg.Instance)
	tr, err := trace.Setup(ctx, "worker", cfg.Instance, getenv)
	if err != nil {
		return err
	}
	defer tr.ShutdownWithin(ctx, 5*time.Second, log)

	reg := service.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		return err
	}
	rm, err := reconcile.NewMetrics(reg)
	if err != nil {
		return err
	}
	rdb, err := dial.Redis(cfg.RedisMode, cfg.RedisURL, dial.RedisTuning{ContextTimeout: true})
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}

	// The worker serves no clients: WORKER_LISTEN_ADDR is its ops listener.
	svc, err := service.New(log, reg, service.Config{
		OpsAddr: cfg.ListenAddr, PprofAddr: cfg.PprofAddr, PprofEnv: "WORKER_PPROF_ADDR", ShutdownGrace: cfg.ShutdownGrace,
	})
	if err != nil {
		return err
	}
	defer svc.Close()

	svc.OnStop("redis", func(context.Context) error { return rdb.Close() })
	if err := tr.Redis(rdb); err != nil {
		return err
	}
	svc.Check(ops.Check{Name: "redis", Required: true, Fn: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }})
	idemCfg := idem.Config{Lease: cfg.Lease, Retention: cfg.Retention, Timeout: cfg.IdemTimeout, Observe: m.Boundary}
	// oncepay's boundary; the teaching build may swap in a comparison
	// strategy, announced in details (strategy*.go)
	boundary, details := boundaryFor(ctx, log, cfg.Strategy, rdb, idemCfg)
	if details != nil {
		svc.Details(details)
	}

	pool, err := svc.Postgres(ctx, cfg.DatabaseURL, cfg.PG, tr.Postgres)
	if err != nil {
		return err
	}
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
	svc.OnStop("amqp connection", func(context.Context) error { return conn.Close() })
	topo := broker.Topology{
		Topology:    message.Topology{Exchange: cfg.Exchange, Queue: cfg.Queue, DeliveryLimit: cfg.DeliveryLimit},
		RetryDelays: cfg.RetryDelays,
	}
	cons, err := conn.Consume(topo, cfg.Prefetch, "worker-"+cfg.Instance)
	if err != nil {
		return err
	}
	// Closing the channel returns every delivery not settled to the queue.
	svc.OnStop("amqp channel", func(context.Context) error { return cons.Channel.Close() })

	handler := charge.NewHandler(charge.Deps{
		Boundary: boundary, Payments: pays, PSP: psp, PSPTimeout: cfg.PSPTimeout,
		EndRetry: cfg.EndRetry, MaxHold: cfg.MaxHold, Instance: cfg.Instance, Log: log, Metrics: m,
	})
	loop := consumer.New(loopConfig(cfg, topo), consumer.Deps{
		Handler: handler, Channel: cons, Publisher: cons.Publisher, Guard: cons.Guard, Log: log, Metrics: m,
	})
	reconciler := reconcile.New(reconcile.Config{
		After: cfg.ReconcileAfter, Interval: cfg.ReconcileInterval, Batch: cfg.ReconcileBatch,
		PSPTimeout: cfg.PSPTimeout, MeasureOnly: details != nil, // a comparison strategy: measure, repair nothing
	}, reconcile.Deps{
		Stage:    charge.NewStage(boundary, idemstage.Config{Stage: charge.Stage, Logger: log}),
		Payments: pays, PSP: psp, Charger: handler, Log: log, Metrics: rm,
	})

	var consuming atomic.Bool
	consuming.Store(true)
	svc.Check(ops.Check{Name: "amqp", Required: true, Fn: func(context.Context) error {
		if !conn.Open() || !cons.Alive() || !consuming.Load() {
			return errors.New("consumer not running (connection recovering or closed)")
		}
		return nil
	}})
	svc.Go("consumer", func(ctx context.Context) error {
		defer consuming.Store(false)
		return loop.Run(ctx, cons.Deliveries)
	})
	svc.Go("reconciler", func(ctx context.Context) error {
		reconciler.Run(ctx)
		return nil
	})
	svc.Go("amqp", func(ctx context.Context) error {
		select {
		case err := <-conn.Dead():
			return err
		case <-ctx.Done():
			return nil
		}
	})
	log.Info("consuming", "queue", cfg.Queue, "exchange", cfg.Exchange,
		"prefetch", cfg.Prefetch, "concurrency", cfg.Concurrency, "lease", cfg.Lease.String())
	return svc.Run(ctx)
}

// loopConfig derives the consumer loop's settings from cfg and the topology.
func loopConfig(cfg config, t broker.Topology) consumer.Config {
	c := consumer.Config{
		Concurrency: cfg.Concurrency, DeadLetter: t.DeadLetterQueue(),
		Grace: cfg.ShutdownGrace, PublishTimeout: 5 * time.Second,
		// Half the prefetch left over by the handlers: acks waiting to be
		// sent hold prefetch slots.
		AckDelay: cfg.AckDelay, AckBatch: max(1, (cfg.Prefetch-cfg.Concurrency)/2),
	}
	for i, d := range cfg.RetryDelays {
		c.Retries = append(c.Retries, consumer.RetryQueue{Queue: t.RetryQueue(i), Delay: d})
	}
	return c
}
