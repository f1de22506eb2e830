package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/pkg/service/httpserver"
	"github.com/oncepay/oncepay/pkg/service/ops"
	"github.com/oncepay/oncepay/pkg/service/pgpool"
	"github.com/oncepay/oncepay/pkg/service/pprofserve"
	"github.com/oncepay/oncepay/pkg/service/trace"
	"github.com/oncepay/oncepay/services/api/internal/auth"
	"github.com/oncepay/oncepay/services/api/internal/config"
	"github.com/oncepay/oncepay/services/api/internal/httpapi"
	"github.com/oncepay/oncepay/services/api/internal/metrics"
	"github.com/oncepay/oncepay/services/api/internal/outbox"
	"github.com/oncepay/oncepay/services/api/internal/payments"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
)

// serve wires the api, serves HTTP until ctx ends, then shuts down:
// readiness 503 at once, SHUTDOWN_DELAY of still serving, http.Server
// Shutdown (stop accepting, drain in-flight requests, including those
// still retrying the end of their stage in Redis before they answer), stop
// the relay, wait for inline publishes, close RabbitMQ, Redis and
// Postgres, all within SHUTDOWN_GRACE of the signal. It does not need
// Redis or RabbitMQ to be up to start; readiness reports them.
func serve(ctx context.Context, cfg config.Serve, tr *trace.Tracing, log *slog.Logger) error {
	log.Info("starting", "config", cfg)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := metrics.New(reg, cfg.Instance)

	// Listen first: a taken port fails the start before anything is dialled.
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	opsLn, err := net.Listen("tcp", cfg.OpsAddr)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("listen (ops): %w", err)
	}
	defer opsLn.Close()
	if cfg.MigrateOnStart {
		// On a pool of its own, without the serving timeouts: a migration
		// may run long, or wait for another replica's.
		if err := migrate(ctx, cfg.DatabaseURL, log); err != nil {
			_ = ln.Close()
			return err
		}
	}
	pool, err := pgpool.New(ctx, cfg.DatabaseURL, cfg.PG, tr.Postgres)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("postgres pool: %w", err)
	}

	redisOpt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		_ = ln.Close()
		pool.Close()
		return fmt.Errorf("redis url: %w", err)
	}
	redisOpt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(redisOpt)
	if err := tr.Redis(rdb); err != nil {
		_ = ln.Close()
		pool.Close()
		return err
	}
	idemCfg := idem.Config{Lease: cfg.IdemLease, Retention: cfg.IdemRetention, Timeout: cfg.IdemTimeout, Observe: m.ObserveIdem}
	boundary := idem.New(rdb, idemCfg)
	// how full the boundary's Redis is, read at each scrape (alerts warn before it refuses writes)
	reg.MustRegister(metrics.NewRedisMemory(rdb, time.Second, 10*time.Second))

	pub := outbox.NewPublisher(outbox.PublisherConfig{
		URL: cfg.AMQPURL, ConnectionName: "oncepay-api/" + cfg.Instance,
		Topology: message.Topology{Exchange: cfg.AMQPExchange, Queue: cfg.AMQPQueue, DeliveryLimit: cfg.AMQPDeliveryLimit},
		Tracer:   tr.Tracer("github.com/oncepay/oncepay/services/api/internal/outbox"),
	}, log.With("component", "amqp"))
	pub.Start()
	box := outbox.New(pool, pub, m, log.With("component", "outbox"), outbox.Config{
		RelayInterval: cfg.RelayInterval, RelayAge: cfg.RelayAge,
		SweepInterval: cfg.SweepInterval, SweepAge: cfg.SweepAge, SweepLimit: cfg.SweepLimit,
	})

	var (
		idempotency = httpapi.IdemBoundary(boundary)
		pays        = httpapi.PaymentStore(payments.NewStore(pool, box, m))
	)
	var draining atomic.Bool
	opsDeps := ops.Deps{
		Log: log.With("component", "ops"),
		Checks: []ops.Check{
			{Name: "redis", Required: true, Fn: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
			{Name: "postgres", Required: true, Fn: pool.Ping},
			// Not required: payments are accepted while RabbitMQ is down (the
			// outbox keeps their messages), so its outage must not take every
			// api replica out of the load balancer.
			{Name: "rabbitmq", Required: false, Fn: pub.Check},
		},
		Gatherer: reg,
		Draining: draining.Load,
	}
	if !cfg.IdemStrategy.Real() { // a demonstration strategy: see strategy.go
		idempotency, pays = comparison(cfg.IdemStrategy, idempotency, pays, rdb, idemCfg)
		opsDeps.Details = map[string]string{"idempotency_strategy": string(cfg.IdemStrategy), "warning": cfg.IdemStrategy.Warning()}
		go warnLoudly(ctx, log, cfg.IdemStrategy, time.Minute)
	}
	srv := httpserver.New(tr.Handler(httpapi.NewServer(httpapi.Deps{
		Logger:      log,
		Keys:        auth.NewKeyring(cfg.Merchants),
		Boundary:    idempotency,
		Payments:    pays,
		Metrics:     m,
		RateLimits:  httpapi.NewRateLimits(slices.Collect(maps.Keys(cfg.Merchants)), cfg.RateLimit, cfg.RateBurst),
		WorkTimeout: cfg.IdemLease,
		EndRetry:    cfg.IdemEndRetry,
	}), "api"), log)
	opsSrv := httpserver.New(ops.NewHandler(opsDeps), log)
	if cfg.PprofAddr != "" {
		go pprofserve.Serve(ctx, cfg.PprofAddr, "API_PPROF_ADDR", log)
	}
	serveErr := make(chan error, 2)
	go func() { serveErr <- srv.Serve(ln) }()
	go func() { serveErr <- opsSrv.Serve(opsLn) }()
	log.Info("listening", "addr", ln.Addr().String(), "ops_addr", opsLn.Addr().String())

	relayCtx, stopRelay := context.WithCancel(context.WithoutCancel(ctx))
	relayDone := make(chan struct{})
	go func() {
		defer close(relayDone)
		box.Run(relayCtx)
	}()

	var failure error
	select {
	case <-ctx.Done():
		log.Info("shutdown signal received")
	case err := <-serveErr:
		failure = fmt.Errorf("http server: %w", err)
	}

	deadline := time.Now().Add(cfg.ShutdownGrace)
	draining.Store(true)
	log.Info("draining: readiness now answers 503", "grace", cfg.ShutdownGrace.String(), "delay", cfg.ShutdownDelay.String())
	if failure == nil && cfg.ShutdownDelay > 0 {
		time.Sleep(cfg.ShutdownDelay)
	}
	sctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("grace period over: closing connections of unfinished requests", "err", err)
		_ = srv.Close()
	}
	_ = opsSrv.Close()
	log.Info("http server stopped")
	stopRelay()
	within(deadline, log, "outbox relay", func() { <-relayDone })
	if err := box.Wait(sctx); err != nil {
		log.Warn("inline publishes still running; unconfirmed rows stay for the relay", "err", err)
	}
	within(deadline, log, "rabbitmq", func() { _ = pub.Close() })
	within(deadline, log, "redis", func() { _ = rdb.Close() })
	within(deadline, log, "postgres", pool.Close)
	log.Info("stopped")
	return failure
}

// within runs fn and waits for it until deadline, logging if it gives up
// (fn then goes on in the background; the process is about to exit).
func within(deadline time.Time, log *slog.Logger, what string, fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		log.Warn("grace period over: not waiting any longer", "for", what)
	}
}
