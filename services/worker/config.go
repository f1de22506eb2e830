package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncepay/oncepay/pkg/idem/naive"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
)

// config is everything the worker reads from its environment, read once by
// run. docs/worker.md lists every variable.
type config struct {
	ListenAddr  string // WORKER_LISTEN_ADDR, default 127.0.0.1:8081
	RedisURL    string // REDIS_URL, required
	DatabaseURL string // DATABASE_URL, required
	AMQPURL     string // AMQP_URL, required
	PSPURL      string // PSP_URL, required

	Exchange      string          // AMQP_EXCHANGE, default payments
	Queue         string          // AMQP_QUEUE, default payments.charge; base of the retry and dead-letter names
	Prefetch      int             // WORKER_PREFETCH, default 16
	Concurrency   int             // WORKER_CONCURRENCY, default 8
	RetryDelays   []time.Duration // WORKER_RETRY_DELAYS, default 1s,5s,30s
	MaxAttempts   int             // WORKER_MAX_ATTEMPTS, default 10
	DeliveryLimit int             // WORKER_DELIVERY_LIMIT, default 20

	ReconnectInterval time.Duration // AMQP_RECONNECT_INTERVAL, default 1s
	ReconnectAttempts int           // AMQP_RECONNECT_ATTEMPTS, default 300

	Lease       time.Duration // IDEM_LEASE, default 15s
	Retention   time.Duration // IDEM_RETENTION, default 24h
	IdemTimeout time.Duration // IDEM_TIMEOUT, default 500ms
	PSPTimeout  time.Duration // PSP_TIMEOUT, default 5s
	// EndRetry (IDEM_END_RETRY, default 5s) is how long Complete and Release
	// are retried in-process while Redis does not answer; 0 turns it off.
	EndRetry time.Duration
	// Strategy is IDEM_STRATEGY: oncepay (the default, the real boundary)
	// or a comparison strategy, for demonstrations only.
	Strategy naive.Strategy

	ShutdownGrace time.Duration // SHUTDOWN_GRACE, default 20s
	Instance      string        // WORKER_INSTANCE, default the host name
	LogLevel      slog.Level    // LOG_LEVEL: debug, info (default), warn, error
	// PprofAddr (WORKER_PPROF_ADDR), when set, serves net/http/pprof on its
	// own listener at that address, for profiling; off by default.
	PprofAddr string
}

// loadConfig reads the configuration through getenv and reports every
// problem at once, not just the first. hostname is the default of
// WORKER_INSTANCE.
func loadConfig(getenv func(string) string, hostname string) (config, error) {
	p := envParser{getenv: getenv}
	c := config{
		ListenAddr:  p.str("WORKER_LISTEN_ADDR", "127.0.0.1:8081"),
		RedisURL:    p.str("REDIS_URL", ""),
		DatabaseURL: p.str("DATABASE_URL", ""),
		AMQPURL:     p.str("AMQP_URL", ""),
		PSPURL:      p.str("PSP_URL", ""),

		Exchange:      p.str("AMQP_EXCHANGE", "payments"),
		Queue:         p.str("AMQP_QUEUE", "payments.charge"),
		Prefetch:      p.positive("WORKER_PREFETCH", 16),
		Concurrency:   p.positive("WORKER_CONCURRENCY", 8),
		RetryDelays:   p.durations("WORKER_RETRY_DELAYS", []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}),
		MaxAttempts:   p.positive("WORKER_MAX_ATTEMPTS", 10),
		DeliveryLimit: p.positive("WORKER_DELIVERY_LIMIT", 20),

		ReconnectInterval: p.duration("AMQP_RECONNECT_INTERVAL", time.Second),
		ReconnectAttempts: p.positive("AMQP_RECONNECT_ATTEMPTS", 300),

		Lease:       p.duration("IDEM_LEASE", 15*time.Second),
		Retention:   p.duration("IDEM_RETENTION", 24*time.Hour),
		IdemTimeout: p.duration("IDEM_TIMEOUT", 500*time.Millisecond),
		PSPTimeout:  p.duration("PSP_TIMEOUT", 5*time.Second),
		EndRetry:    p.duration("IDEM_END_RETRY", 5*time.Second),
		Strategy:    p.strategy("IDEM_STRATEGY"),

		ShutdownGrace: p.duration("SHUTDOWN_GRACE", 20*time.Second),
		Instance:      p.str("WORKER_INSTANCE", hostname),
		LogLevel:      p.level("LOG_LEVEL", slog.LevelInfo),
		PprofAddr:     p.str("WORKER_PPROF_ADDR", ""),
	}
	if _, _, err := net.SplitHostPort(c.PprofAddr); c.PprofAddr != "" && err != nil {
		p.fail("WORKER_PPROF_ADDR", "want host:port")
	}

	p.check("REDIS_URL", c.RedisURL, func(s string) error { _, err := redis.ParseURL(s); return err })
	p.check("DATABASE_URL", c.DatabaseURL, func(s string) error { _, err := pgxpool.ParseConfig(s); return err })
	p.check("AMQP_URL", c.AMQPURL, func(s string) error { _, err := amqp.ParseURI(s); return err })
	p.check("PSP_URL", c.PSPURL, func(s string) error {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("want http(s)://host[:port]")
		}
		return nil
	})
	if c.ListenAddr == "" {
		p.fail("WORKER_LISTEN_ADDR", "must not be empty")
	}
	if c.Exchange == "" {
		p.fail("AMQP_EXCHANGE", "must not be empty")
	}
	// The longest derived name is <queue>.retry.v2.<delay>; AMQP names are at most 255 bytes.
	if c.Queue == "" || len(c.Queue) > 200 {
		p.fail("AMQP_QUEUE", "must be 1-200 characters (retry and dead-letter names are derived from it)")
	}
	if c.Concurrency > c.Prefetch && !p.failed("WORKER_CONCURRENCY") && !p.failed("WORKER_PREFETCH") {
		p.fail("WORKER_CONCURRENCY", fmt.Sprintf("%d exceeds WORKER_PREFETCH %d: the extra handlers could never get a message", c.Concurrency, c.Prefetch))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"AMQP_RECONNECT_INTERVAL", c.ReconnectInterval}, {"IDEM_LEASE", c.Lease}, {"IDEM_RETENTION", c.Retention},
		{"IDEM_TIMEOUT", c.IdemTimeout}, {"PSP_TIMEOUT", c.PSPTimeout}, {"SHUTDOWN_GRACE", c.ShutdownGrace},
	} {
		if d.v <= 0 && !p.failed(d.name) {
			p.fail(d.name, "must be positive")
		}
	}
	if c.EndRetry < 0 {
		p.fail("IDEM_END_RETRY", "must not be negative")
	}
	if c.IdemTimeout >= c.Lease && c.IdemTimeout > 0 && c.Lease > 0 {
		p.fail("IDEM_TIMEOUT", fmt.Sprintf("%s must be shorter than IDEM_LEASE %s", c.IdemTimeout, c.Lease))
	}
	if c.Retention < c.Lease && c.Retention > 0 && c.Lease > 0 {
		p.fail("IDEM_RETENTION", fmt.Sprintf("%s must not be shorter than IDEM_LEASE %s", c.Retention, c.Lease))
	}
	if c.Instance == "" {
		p.fail("WORKER_INSTANCE", "must not be empty (and the host name is unknown)")
	}
	if len(p.problems) > 0 {
		return config{}, fmt.Errorf("configuration: %w", errors.Join(p.problems...))
	}
	return c, nil
}

// envParser reads typed variables and collects every problem.
type envParser struct {
	getenv   func(string) string
	problems []error
	bad      []string
}

func (p *envParser) fail(name, msg string) {
	p.bad = append(p.bad, name)
	p.problems = append(p.problems, fmt.Errorf("%s %s", name, msg))
}

func (p *envParser) failed(name string) bool { return slices.Contains(p.bad, name) }

func (p *envParser) str(name, def string) string {
	if v := strings.TrimSpace(p.getenv(name)); v != "" {
		return v
	}
	return def
}

// check fails name when it is empty (required) or valid rejects it. The
// value is never echoed: URLs carry passwords.
func (p *envParser) check(name, v string, valid func(string) error) {
	if v == "" {
		p.fail(name, "is required")
		return
	}
	if err := valid(v); err != nil {
		p.fail(name, "is not a valid URL")
	}
}

func (p *envParser) duration(name string, def time.Duration) time.Duration {
	v := p.str(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		p.fail(name, fmt.Sprintf("%q is not a duration like 500ms or 15s", v))
		return def
	}
	return d
}

// durations reads a comma-separated list of positive, strictly increasing
// durations.
func (p *envParser) durations(name string, def []time.Duration) []time.Duration {
	v := p.str(name, "")
	if v == "" {
		return def
	}
	var out []time.Duration
	for s := range strings.SplitSeq(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		switch {
		case err != nil:
			p.fail(name, fmt.Sprintf("%q is not a duration like 1s", strings.TrimSpace(s)))
			return def
		case d < time.Millisecond || d%time.Millisecond != 0:
			p.fail(name, fmt.Sprintf("%s must be a whole number of milliseconds, at least 1ms", d))
			return def
		case len(out) > 0 && d <= out[len(out)-1]:
			p.fail(name, "must be strictly increasing, e.g. 1s,5s,30s")
			return def
		}
		out = append(out, d)
	}
	return out
}

func (p *envParser) positive(name string, def int) int {
	v := p.str(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		p.fail(name, fmt.Sprintf("%q is not a positive integer", v))
		return def
	}
	return n
}

func (p *envParser) strategy(name string) naive.Strategy {
	s, err := naive.ParseStrategy(p.str(name, ""))
	if err != nil {
		p.fail(name, fmt.Sprintf("%q is not a strategy (%s)", p.str(name, ""), strings.Join(strategyNames(), ", ")))
		return naive.StrategyOncepay
	}
	return s
}

func strategyNames() []string {
	var names []string
	for _, s := range naive.Strategies() {
		names = append(names, string(s))
	}
	return names
}

func (p *envParser) level(name string, def slog.Level) slog.Level {
	v := p.str(name, "")
	if v == "" {
		return def
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(v)); err != nil {
		p.fail(name, fmt.Sprintf("%q is not a level (debug, info, warn, error)", v))
		return def
	}
	return l
}
