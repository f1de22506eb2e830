package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/pkg/service"
	"github.com/oncepay/oncepay/pkg/service/dial"
	"github.com/oncepay/oncepay/pkg/service/ops"
	"github.com/oncepay/oncepay/pkg/service/trace"
	"github.com/oncepay/oncepay/services/api/internal/auth"
	"github.com/oncepay/oncepay/services/api/internal/config"
	"github.com/oncepay/oncepay/services/api/internal/httpapi"
	"github.com/oncepay/oncepay/services/api/internal/metrics"
	"github.com/oncepay/oncepay/services/api/internal/outbox"
	"github.com/oncepay/oncepay/services/api/internal/payments"
)

// serve wires the api and runs it as a service.Service: readiness 503 at
// once on a signal, SHUTDOWN_DELAY of still serving, then the payments
// listener drains its requests in flight (including those still retrying
// the end of their stage in Redis before they answer), the relay stops,
// inline publishes finish, RabbitMQ, Redis and Postgres close, all within
// SHUTDOWN_GRACE of the signal. It does not need Redis or RabbitMQ to be up
// to start; readiness reports them.
func serve(ctx context.Context, cfg config.Serve, tr *trace.Tracing, log *slog.Logger) error {
	log.Info("starting", "config", cfg)
	reg := service.NewRegistry()
	m := metrics.New(reg, cfg.Instance)
	rdb, err := dial.Redis(cfg.RedisMode, cfg.RedisURL, dial.RedisTuning{ContextTimeout: true})
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}

	svc, err := service.New(log, reg, service.Config{
		OpsAddr: cfg.OpsAddr, PprofAddr: cfg.PprofAddr, PprofEnv: "API_PPROF_ADDR",
		ShutdownGrace: cfg.ShutdownGrace, ShutdownDelay: cfg.ShutdownDelay,
	})
	if err != nil {
		return err
	}
	defer svc.Close()
	srv, err := svc.Listen("addr", cfg.ListenAddr) // its handler comes once everything is wired
	if err != nil {
		return err
	}
	if cfg.MigrateOnStart {
		// On a pool of its own, without the serving timeouts: a migration
		// may run long, or wait for another replica's.
		if err := migrate(ctx, cfg.DatabaseURL, log); err != nil {
			return err
		}
	}
	pool, err := svc.Postgres(ctx, cfg.DatabaseURL, cfg.PG, tr.Postgres)
	if err != nil {
		return err
	}

	svc.OnStop("redis", func(context.Context) error { return rdb.Close() })
	if err := tr.Redis(rdb); err != nil {
		return err
	}
	svc.Check(ops.Check{Name: "redis", Required: true, Fn: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }})
	idemCfg := idem.Config{Lease: cfg.IdemLease, Retention: cfg.IdemRetention, Timeout: cfg.IdemTimeout, Observe: m.ObserveIdem}
	// how full the boundary's Redis is, read at each scrape (alerts warn before it refuses writes)
	reg.MustRegister(metrics.NewRedisMemory(metrics.FullestPrimary(rdb), time.Second, 10*time.Second))

	pub := outbox.NewPublisher(outbox.PublisherConfig{
		URL: cfg.AMQPURL, ConnectionName: "oncepay-api/" + cfg.Instance,
		Topology: message.Topology{Exchange: cfg.AMQPExchange, Queue: cfg.AMQPQueue, DeliveryLimit: cfg.AMQPDeliveryLimit},
		Tracer:   tr.Tracer("github.com/oncepay/oncepay/services/api/internal/outbox"),
	}, log.With("component", "amqp"))
	pub.Start()
	svc.OnStop("rabbitmq", func(context.Context) error { return pub.Close() })
	// Not required: payments are accepted while RabbitMQ is down (the outbox
	// keeps their messages), so its outage must not take every api replica
	// out of the load balancer.
	svc.Check(ops.Check{Name: "rabbitmq", Required: false, Fn: pub.Check})
	box := outbox.New(pool, pub, m, log.With("component", "outbox"), outbox.Config{
		RelayInterval: cfg.RelayInterval, RelayAge: cfg.RelayAge,
		SweepInterval: cfg.SweepInterval, SweepAge: cfg.SweepAge, SweepLimit: cfg.SweepLimit,
	})
	svc.OnStop("inline publishes", func(ctx context.Context) error {
		if err := box.Wait(ctx); err != nil {
			return fmt.Errorf("still running; unconfirmed rows stay for the relay: %w", err)
		}
		return nil
	})
	svc.Go("outbox relay", func(ctx context.Context) error {
		box.Run(ctx)
		return nil
	})

	// oncepay's boundary; the teaching build may swap in a comparison strategy (strategy*.go)
	boundary, pays, details := boundaryFor(ctx, log, cfg.IdemStrategy, rdb, idemCfg, payments.NewStore(pool, box, m))
	if details != nil {
		svc.Details(details)
	}
	srv.Handler = tr.Handler(httpapi.NewServer(httpapi.Deps{
		Logger:      log,
		Keys:        auth.NewKeyring(cfg.Merchants),
		Boundary:    boundary,
		Payments:    pays,
		Metrics:     m,
		RateLimits:  httpapi.NewRateLimits(slices.Collect(maps.Keys(cfg.Merchants)), cfg.RateLimit, cfg.RateBurst),
		MaxInFlight: cfg.MaxInFlight,
		WorkTimeout: cfg.IdemLease,
		Retention:   cfg.IdemRetention,
		EndRetry:    cfg.IdemEndRetry,
	}), "api")
	return svc.Run(ctx)
}
