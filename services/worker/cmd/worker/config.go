package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/pkg/service/dial"
	"github.com/oncepay/oncepay/pkg/service/envconf"
	"github.com/oncepay/oncepay/pkg/service/pgpool"
)

// config is everything the worker reads from its environment, read once by
// run. The defaults are in load, and docs/configuration.md lists every
// variable with its default (TestConfigurationDoc keeps the two alike).
type config struct {
	ListenAddr  string // WORKER_LISTEN_ADDR
	RedisMode   string // REDIS_MODE: single, cluster or sentinel (how REDIS_URL reads; package dial)
	RedisURL    string // REDIS_URL, required
	DatabaseURL string // DATABASE_URL, required
	AMQPURL     string // AMQP_URL, required: one amqp:// URL or a cluster's nodes, comma-separated (dial.ParseAMQP)
	PSPURL      string // PSP_URL, required
	// PG is the session timeouts of the database pool (PG_STATEMENT_TIMEOUT,
	// PG_LOCK_TIMEOUT, PG_IDLE_IN_TRANSACTION_TIMEOUT; pgpool.Defaults).
	PG pgpool.Timeouts

	Exchange      string          // AMQP_EXCHANGE
	Queue         string          // AMQP_QUEUE; base of the retry and dead-letter names
	Prefetch      int             // WORKER_PREFETCH
	Concurrency   int             // WORKER_CONCURRENCY
	AckDelay      time.Duration   // WORKER_ACK_DELAY: how long an ack may wait for a multiple ack; 0 acks each at once
	RetryDelays   []time.Duration // WORKER_RETRY_DELAYS; the last repeats without limit
	DeliveryLimit int             // AMQP_DELIVERY_LIMIT (the api declares the queue too: set it alike)

	ReconnectInterval time.Duration // AMQP_RECONNECT_INTERVAL
	ReconnectAttempts int           // AMQP_RECONNECT_ATTEMPTS

	Lease       time.Duration // IDEM_LEASE
	Retention   time.Duration // IDEM_RETENTION
	IdemTimeout time.Duration // IDEM_TIMEOUT
	PSPTimeout  time.Duration // PSP_TIMEOUT
	// EndRetry (IDEM_END_RETRY) is how long Complete and Release are
	// retried in-process while Redis does not answer; 0 turns it off.
	EndRetry time.Duration
	// The reconciler settles payments pending for longer than
	// ReconcileAfter (WORKER_RECONCILE_AFTER), up to ReconcileBatch
	// (WORKER_RECONCILE_BATCH) every ReconcileInterval
	// (WORKER_RECONCILE_INTERVAL).
	ReconcileAfter    time.Duration
	ReconcileInterval time.Duration
	ReconcileBatch    int
	// MaxHold (WORKER_MAX_HOLD, default 4 × IDEM_LEASE) bounds how long
	// one delivery works under the charge stage, heartbeat or not; past it
	// the work is cancelled, the stage released and the delivery retried.
	MaxHold time.Duration
	// Strategy is IDEM_STRATEGY: oncepay (the default, the real boundary).
	// Only the teaching build (-tags compare) accepts a comparison
	// strategy (checkStrategy).
	Strategy string

	ShutdownGrace time.Duration // SHUTDOWN_GRACE
	Instance      string        // WORKER_INSTANCE, default the host name
	LogLevel      slog.Level    // LOG_LEVEL: debug, info, warn, error
	// PprofAddr (WORKER_PPROF_ADDR), when set, serves net/http/pprof on its
	// own listener at that address, for profiling; off by default.
	PprofAddr string
}

// loadConfig reads the configuration through getenv and reports every
// problem at once, not just the first. hostname is the default of
// WORKER_INSTANCE.
func loadConfig(getenv func(string) string, hostname string) (config, error) {
	p := envconf.New(getenv)
	c := load(p, hostname)
	if err := p.Err(); err != nil {
		return config{}, err
	}
	return c, nil
}

// load reads and checks the configuration through p, recording its
// problems in p. It reads every variable whatever the others hold, so that
// p.Vars lists them all (see TestConfigurationDoc).
func load(p *envconf.Parser, hostname string) config {
	c := config{
		ListenAddr:  p.String("WORKER_LISTEN_ADDR", "127.0.0.1:8081"),
		RedisMode:   p.String("REDIS_MODE", dial.RedisSingle),
		RedisURL:    p.Required("REDIS_URL"),
		DatabaseURL: p.Required("DATABASE_URL"),
		AMQPURL:     p.Required("AMQP_URL"),
		PSPURL:      p.Required("PSP_URL"),
		PG:          pgpool.Read(p, ""),

		Exchange:      p.String("AMQP_EXCHANGE", message.DefaultExchange),
		Queue:         p.String("AMQP_QUEUE", message.DefaultQueue),
		Prefetch:      p.Positive("WORKER_PREFETCH", 16),
		Concurrency:   p.Positive("WORKER_CONCURRENCY", 8),
		AckDelay:      p.Duration("WORKER_ACK_DELAY", 20*time.Millisecond),
		RetryDelays:   durations(p, "WORKER_RETRY_DELAYS", []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}),
		DeliveryLimit: p.Positive("AMQP_DELIVERY_LIMIT", message.DefaultDeliveryLimit),

		ReconnectInterval: p.Duration("AMQP_RECONNECT_INTERVAL", time.Second),
		ReconnectAttempts: p.Positive("AMQP_RECONNECT_ATTEMPTS", 300),

		Lease:       p.Duration("IDEM_LEASE", 15*time.Second),
		Retention:   p.Duration("IDEM_RETENTION", 24*time.Hour),
		IdemTimeout: p.Duration("IDEM_TIMEOUT", 500*time.Millisecond),
		PSPTimeout:  p.Duration("PSP_TIMEOUT", 5*time.Second),
		EndRetry:    p.Duration("IDEM_END_RETRY", 5*time.Second),
		Strategy:    p.String("IDEM_STRATEGY", "oncepay"),

		ReconcileAfter:    p.Duration("WORKER_RECONCILE_AFTER", 5*time.Minute),
		ReconcileInterval: p.Duration("WORKER_RECONCILE_INTERVAL", 30*time.Second),
		ReconcileBatch:    p.Positive("WORKER_RECONCILE_BATCH", 100),

		ShutdownGrace: p.Duration("SHUTDOWN_GRACE", 20*time.Second),
		Instance:      p.String("WORKER_INSTANCE", hostname),
		LogLevel:      p.Level("LOG_LEVEL", slog.LevelInfo),
		PprofAddr:     p.String("WORKER_PPROF_ADDR", ""),
	}
	p.DescribeDefault("WORKER_INSTANCE", "the host name")
	c.MaxHold = p.Duration("WORKER_MAX_HOLD", 4*c.Lease)
	p.DescribeDefault("WORKER_MAX_HOLD", "4 × IDEM_LEASE")
	if _, _, err := net.SplitHostPort(c.PprofAddr); c.PprofAddr != "" && err != nil {
		p.Fail("WORKER_PPROF_ADDR", "want host:port")
	}

	if !slices.Contains(dial.RedisModes, c.RedisMode) {
		p.Fail("REDIS_MODE", fmt.Sprintf("%q: want one of %s", c.RedisMode, strings.Join(dial.RedisModes, ", ")))
	} else {
		checkDial(p, "REDIS_URL", c.RedisURL, func(s string) error { return dial.CheckRedis(c.RedisMode, s) })
	}
	checkURL(p, "DATABASE_URL", c.DatabaseURL, func(s string) error { _, err := pgxpool.ParseConfig(s); return err })
	checkDial(p, "AMQP_URL", c.AMQPURL, func(s string) error { _, err := dial.ParseAMQP(s); return err })
	checkURL(p, "PSP_URL", c.PSPURL, func(s string) error {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("want http(s)://host[:port]")
		}
		return nil
	})
	if c.ListenAddr == "" {
		p.Fail("WORKER_LISTEN_ADDR", "must not be empty")
	}
	if c.Exchange == "" {
		p.Fail("AMQP_EXCHANGE", "must not be empty")
	}
	// The longest derived name is <queue>.retry.v2.<delay>; AMQP names are at most 255 bytes.
	if c.Queue == "" || len(c.Queue) > 200 {
		p.Fail("AMQP_QUEUE", "must be 1-200 characters (retry and dead-letter names are derived from it)")
	}
	if c.Concurrency > c.Prefetch && !p.Failed("WORKER_CONCURRENCY") && !p.Failed("WORKER_PREFETCH") {
		p.Fail("WORKER_CONCURRENCY", fmt.Sprintf("%d exceeds WORKER_PREFETCH %d: the extra handlers could never get a message", c.Concurrency, c.Prefetch))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"AMQP_RECONNECT_INTERVAL", c.ReconnectInterval}, {"IDEM_LEASE", c.Lease}, {"IDEM_RETENTION", c.Retention},
		{"IDEM_TIMEOUT", c.IdemTimeout}, {"PSP_TIMEOUT", c.PSPTimeout}, {"SHUTDOWN_GRACE", c.ShutdownGrace},
		{"WORKER_RECONCILE_AFTER", c.ReconcileAfter}, {"WORKER_RECONCILE_INTERVAL", c.ReconcileInterval},
		{"WORKER_MAX_HOLD", c.MaxHold},
	} {
		if d.v <= 0 && !p.Failed(d.name) {
			p.Fail(d.name, "must be positive")
		}
	}
	if c.EndRetry < 0 {
		p.Fail("IDEM_END_RETRY", "must not be negative")
	}
	if c.IdemTimeout >= c.Lease && c.IdemTimeout > 0 && c.Lease > 0 {
		p.Fail("IDEM_TIMEOUT", fmt.Sprintf("%s must be shorter than IDEM_LEASE %s", c.IdemTimeout, c.Lease))
	}
	if c.Retention < c.Lease && c.Retention > 0 && c.Lease > 0 {
		p.Fail("IDEM_RETENTION", fmt.Sprintf("%s must not be shorter than IDEM_LEASE %s", c.Retention, c.Lease))
	}
	if err := checkStrategy(c.Strategy); err != nil {
		p.Fail("IDEM_STRATEGY", fmt.Sprintf("%q: %v", c.Strategy, err))
	}
	if c.Instance == "" {
		p.Fail("WORKER_INSTANCE", "must not be empty (and the host name is unknown)")
	}
	return c
}

// checkURL fails name when v is empty (required) or valid rejects it. The
// value is never echoed: URLs carry passwords.
func checkURL(p *envconf.Parser, name, v string, valid func(string) error) {
	if v == "" {
		p.Fail(name, "is required")
		return
	}
	if err := valid(v); err != nil {
		p.Fail(name, "is not a valid URL")
	}
}

// checkDial is checkURL for package dial's parsers, whose errors never
// quote the URL: it shows their error.
func checkDial(p *envconf.Parser, name, v string, parse func(string) error) {
	if v == "" {
		p.Fail(name, "is required")
		return
	}
	if err := parse(v); err != nil {
		p.Fail(name, "is not a valid URL: "+err.Error())
	}
}

// durations reads a comma-separated list of positive, strictly increasing
// durations, each a whole number of milliseconds; def when name is unset.
func durations(p *envconf.Parser, name string, def []time.Duration) []time.Duration {
	v := envconf.Lookup(p, name, def)
	if v == "" {
		return def
	}
	var out []time.Duration
	for s := range strings.SplitSeq(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		switch {
		case err != nil:
			p.Fail(name, fmt.Sprintf("%q is not a duration like 1s", strings.TrimSpace(s)))
			return def
		case d < time.Millisecond || d%time.Millisecond != 0:
			p.Fail(name, fmt.Sprintf("%s must be a whole number of milliseconds, at least 1ms", d))
			return def
		case len(out) > 0 && d <= out[len(out)-1]:
			p.Fail(name, "must be strictly increasing, e.g. 1s,5s,30s")
			return def
		}
		out = append(out, d)
	}
	return out
}
