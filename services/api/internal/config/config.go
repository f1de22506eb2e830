// Package config reads the api's configuration from the environment, once,
// into typed structs. Nothing else in the api reads the environment.
//
// Every problem is reported at once: a bad deployment shows its whole list
// of mistakes in one failed start, not one per restart.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/pkg/service/dial"
	"github.com/oncepay/oncepay/pkg/service/envconf"
	"github.com/oncepay/oncepay/pkg/service/pgpool"
	"github.com/oncepay/oncepay/pkg/service/redact"
)

// Serve is the configuration of `api serve`.
type Serve struct {
	ListenAddr string // API_LISTEN_ADDR: the payments port
	// OpsAddr (API_OPS_ADDR) serves /livez, /readyz and /metrics, never
	// the payments port.
	OpsAddr string
	// RedisMode (REDIS_MODE: single, cluster or sentinel) says how
	// RedisURL (REDIS_URL) is read; see package dial.
	RedisMode   string
	RedisURL    string
	DatabaseURL string // DATABASE_URL
	// AMQPURL (AMQP_URL) is one amqp:// URL or the comma-separated URLs
	// of a cluster's nodes (dial.ParseAMQP).
	AMQPURL string
	// Merchants maps merchant id to API key (API_MERCHANT_KEYS). Both are
	// unique: no merchant twice, no key shared by two merchants.
	Merchants map[string]string
	// PG is the session timeouts of the database pool (PG_STATEMENT_TIMEOUT,
	// PG_LOCK_TIMEOUT, PG_IDLE_IN_TRANSACTION_TIMEOUT; pgpool.Defaults).
	PG pgpool.Timeouts
	// RateLimit (API_RATE_LIMIT) is each merchant's request rate per second
	// and api instance, RateBurst (API_RATE_BURST) how many it may send at
	// once; 0 turns the limit off.
	RateLimit float64
	RateBurst int
	// MaxInFlight (API_MAX_INFLIGHT) bounds the requests in flight on the
	// payment routes of this replica; past it a request is refused at
	// once with 503 and Retry-After. 0 turns the bound off.
	MaxInFlight int

	IdemLease     time.Duration // IDEM_LEASE
	IdemRetention time.Duration // IDEM_RETENTION
	IdemTimeout   time.Duration // IDEM_TIMEOUT
	// IdemEndRetry (IDEM_END_RETRY) is how long a request retries a
	// Complete or Release that Redis did not answer, before it sends its
	// answer; 0 turns the retry off.
	IdemEndRetry time.Duration
	// IdemStrategy is the idempotency strategy (IDEM_STRATEGY): oncepay's
	// boundary by default. Only the teaching build (-tags compare) accepts
	// a comparison strategy; the api's main checks the name.
	IdemStrategy string

	AMQPExchange string // AMQP_EXCHANGE
	// AMQPQueue (AMQP_QUEUE) and AMQPDeliveryLimit (AMQP_DELIVERY_LIMIT)
	// name the worker's queue and its x-delivery-limit: the api declares
	// the queue too, with the same definition (message.Topology), so both
	// must be set as for the worker.
	AMQPQueue         string
	AMQPDeliveryLimit int
	RelayInterval     time.Duration // OUTBOX_RELAY_INTERVAL
	RelayAge          time.Duration // OUTBOX_RELAY_AGE
	SweepInterval     time.Duration // OUTBOX_SWEEP_INTERVAL; 0 turns the pending-payment sweeper off
	SweepAge          time.Duration // OUTBOX_SWEEP_AGE
	SweepLimit        int           // OUTBOX_SWEEP_LIMIT

	ShutdownGrace time.Duration // SHUTDOWN_GRACE
	ShutdownDelay time.Duration // SHUTDOWN_DELAY

	MigrateOnStart bool       // API_MIGRATE_ON_START
	Instance       string     // API_INSTANCE
	LogLevel       slog.Level // LOG_LEVEL
	// PprofAddr (API_PPROF_ADDR), when set, serves net/http/pprof on its
	// own listener at that address, for profiling; off by default.
	PprofAddr string
}

// DefaultMaxInFlight is API_MAX_INFLIGHT's default: twice the 32 requests
// per replica that saturate it on the bench runtime (the capacity run of
// docs/perf-overload.md: 64 clients over two replicas, about 270
// payments/s each), so that the bound costs no throughput there, while a
// replica at that rate answers 64 requests in about 0.24 s, within
// IDEM_TIMEOUT (500 ms). Faster replicas may need more.
const DefaultMaxInFlight = 64

// Migrate is the configuration of `api migrate`: only the database.
type Migrate struct {
	DatabaseURL string
	Instance    string
	LogLevel    slog.Level
}

// LoadServe reads the serve configuration through getenv. hostname is the
// default of API_INSTANCE. The error, if any, is an *Error listing every
// problem found.
func LoadServe(getenv func(string) string, hostname string) (Serve, error) {
	p := envconf.New(getenv)
	c := loadServe(p, hostname)
	return c, errorOf(p)
}

// loadServe reads and checks the serve configuration through p, recording
// its problems in p. It reads every variable whatever the others hold, so
// that p.Vars lists them all (see TestConfigurationDoc).
func loadServe(p *envconf.Parser, hostname string) Serve {
	c := Serve{
		ListenAddr:        p.String("API_LISTEN_ADDR", "127.0.0.1:8080"),
		OpsAddr:           p.String("API_OPS_ADDR", "127.0.0.1:8084"),
		RedisMode:         p.String("REDIS_MODE", dial.RedisSingle),
		RedisURL:          required(p, "REDIS_URL"),
		DatabaseURL:       required(p, "DATABASE_URL"),
		AMQPURL:           required(p, "AMQP_URL"),
		PG:                pgpool.Read(p, ""),
		IdemLease:         duration(p, "IDEM_LEASE", 10*time.Second),
		IdemRetention:     duration(p, "IDEM_RETENTION", 24*time.Hour),
		IdemTimeout:       duration(p, "IDEM_TIMEOUT", 500*time.Millisecond),
		IdemEndRetry:      durationMin(p, "IDEM_END_RETRY", 10*time.Second, 0),
		AMQPExchange:      p.String("AMQP_EXCHANGE", message.DefaultExchange),
		AMQPQueue:         p.String("AMQP_QUEUE", message.DefaultQueue),
		AMQPDeliveryLimit: p.Positive("AMQP_DELIVERY_LIMIT", message.DefaultDeliveryLimit),
		RelayInterval:     duration(p, "OUTBOX_RELAY_INTERVAL", time.Second),
		RelayAge:          durationMin(p, "OUTBOX_RELAY_AGE", 3*time.Second, 0),
		SweepInterval:     durationMin(p, "OUTBOX_SWEEP_INTERVAL", 10*time.Second, 0),
		SweepAge:          duration(p, "OUTBOX_SWEEP_AGE", time.Minute),
		SweepLimit:        p.Positive("OUTBOX_SWEEP_LIMIT", 3),
		ShutdownGrace:     duration(p, "SHUTDOWN_GRACE", 15*time.Second),
		ShutdownDelay:     durationMin(p, "SHUTDOWN_DELAY", 0, 0),
		MigrateOnStart:    boolean(p, "API_MIGRATE_ON_START", false),
		Instance:          instance(p, hostname),
		LogLevel:          level(p),
		PprofAddr:         p.String("API_PPROF_ADDR", ""),
	}
	c.Merchants = merchants(p, "API_MERCHANT_KEYS")
	c.RateLimit = p.Float64("API_RATE_LIMIT", 0)
	c.RateBurst = p.Positive("API_RATE_BURST", max(1, int(2*c.RateLimit)))
	p.DescribeDefault("API_RATE_BURST", "2 × API_RATE_LIMIT, at least 1")
	c.MaxInFlight = envconf.Parse(p, "API_MAX_INFLIGHT", DefaultMaxInFlight, func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err == nil && n < 0 {
			err = errors.New("negative")
		}
		return n, err
	}, "a number of requests, 0 (off) or more")
	if c.RateLimit < 0 || math.IsNaN(c.RateLimit) || math.IsInf(c.RateLimit, 0) {
		p.Fail("API_RATE_LIMIT", "must be a finite number of requests per second, 0 (off) or more")
	}
	if c.PprofAddr != "" {
		if _, _, err := net.SplitHostPort(c.PprofAddr); err != nil {
			p.Fail("API_PPROF_ADDR", fmt.Sprintf("%q is not host:port: %v", c.PprofAddr, err))
		}
	}
	c.IdemStrategy = p.String("IDEM_STRATEGY", "oncepay")

	if _, _, err := net.SplitHostPort(c.ListenAddr); err != nil {
		p.Fail("API_LISTEN_ADDR", fmt.Sprintf("%q is not host:port: %v", c.ListenAddr, err))
	}
	if _, _, err := net.SplitHostPort(c.OpsAddr); err != nil {
		p.Fail("API_OPS_ADDR", fmt.Sprintf("%q is not host:port: %v", c.OpsAddr, err))
	} else if c.OpsAddr == c.ListenAddr && !strings.HasSuffix(c.OpsAddr, ":0") {
		p.Fail("API_OPS_ADDR", "must differ from API_LISTEN_ADDR: the ops endpoints never share the payments port")
	}
	if !slices.Contains(dial.RedisModes, c.RedisMode) {
		p.Fail("REDIS_MODE", fmt.Sprintf("%q: want one of %s", c.RedisMode, strings.Join(dial.RedisModes, ", ")))
	} else {
		checkURL(p, "REDIS_URL", c.RedisURL, func(s string) error { return dial.CheckRedis(c.RedisMode, s) })
	}
	checkURL(p, "DATABASE_URL", c.DatabaseURL, parseDatabaseURL)
	checkURL(p, "AMQP_URL", c.AMQPURL, func(s string) error { _, err := dial.ParseAMQP(s); return err })
	switch {
	case c.AMQPExchange == "" || len(c.AMQPExchange) > 255:
		p.Fail("AMQP_EXCHANGE", "must be 1-255 characters")
	case strings.HasPrefix(c.AMQPExchange, "amq."):
		p.Fail("AMQP_EXCHANGE", fmt.Sprintf("%q: the amq. prefix is reserved by RabbitMQ", c.AMQPExchange))
	}
	// The worker derives <queue>.retry.v2.<delay> from it; AMQP names are at most 255 bytes.
	if c.AMQPQueue == "" || len(c.AMQPQueue) > 200 {
		p.Fail("AMQP_QUEUE", "must be 1-200 characters")
	}
	if c.IdemTimeout > 0 && c.IdemLease > 0 && c.IdemTimeout >= c.IdemLease {
		p.Fail("IDEM_TIMEOUT", fmt.Sprintf("%s must be shorter than IDEM_LEASE (%s)", c.IdemTimeout, c.IdemLease))
	}
	if c.IdemRetention > 0 && c.IdemLease > 0 && c.IdemRetention < c.IdemLease {
		p.Fail("IDEM_RETENTION", fmt.Sprintf("%s must be at least IDEM_LEASE (%s)", c.IdemRetention, c.IdemLease))
	}
	if c.ShutdownGrace > 0 && c.ShutdownDelay >= c.ShutdownGrace {
		p.Fail("SHUTDOWN_DELAY", fmt.Sprintf("%s must be shorter than SHUTDOWN_GRACE (%s)", c.ShutdownDelay, c.ShutdownGrace))
	}
	return c
}

// LoadMigrate reads the migrate configuration: DATABASE_URL, API_INSTANCE
// and LOG_LEVEL. The error, if any, is an *Error.
func LoadMigrate(getenv func(string) string, hostname string) (Migrate, error) {
	p := envconf.New(getenv)
	c := loadMigrate(p, hostname)
	return c, errorOf(p)
}

// loadMigrate reads and checks the migrate configuration through p,
// recording its problems in p.
func loadMigrate(p *envconf.Parser, hostname string) Migrate {
	c := Migrate{
		DatabaseURL: required(p, "DATABASE_URL"),
		Instance:    instance(p, hostname),
		LogLevel:    level(p),
	}
	checkURL(p, "DATABASE_URL", c.DatabaseURL, parseDatabaseURL)
	return c
}

// LogValue describes the configuration for a log line, without secrets:
// merchant ids but no keys, URLs without passwords.
func (c Serve) LogValue() slog.Value {
	ids := make([]string, 0, len(c.Merchants))
	for id := range c.Merchants {
		ids = append(ids, id)
	}
	return slog.GroupValue(
		slog.String("listen_addr", c.ListenAddr),
		slog.String("ops_addr", c.OpsAddr),
		slog.String("redis_mode", c.RedisMode),
		slog.String("redis_url", redact.Secret(c.RedisURL)),
		slog.String("database_url", redact.Secret(c.DatabaseURL)),
		slog.String("amqp_url", redact.Secret(c.AMQPURL)),
		slog.Any("merchants", ids),
		slog.String("pg_statement_timeout", c.PG.Statement.String()),
		slog.String("pg_lock_timeout", c.PG.Lock.String()),
		slog.String("pg_idle_in_transaction_timeout", c.PG.IdleInTransaction.String()),
		slog.Float64("rate_limit", c.RateLimit),
		slog.Int("rate_burst", c.RateBurst),
		slog.Int("max_inflight", c.MaxInFlight),
		slog.String("idem_lease", c.IdemLease.String()),
		slog.String("idem_retention", c.IdemRetention.String()),
		slog.String("idem_timeout", c.IdemTimeout.String()),
		slog.String("idem_end_retry", c.IdemEndRetry.String()),
		slog.String("idem_strategy", c.IdemStrategy),
		slog.String("amqp_exchange", c.AMQPExchange),
		slog.String("amqp_queue", c.AMQPQueue),
		slog.Int("amqp_delivery_limit", c.AMQPDeliveryLimit),
		slog.String("outbox_relay_interval", c.RelayInterval.String()),
		slog.String("outbox_relay_age", c.RelayAge.String()),
		slog.String("outbox_sweep_interval", c.SweepInterval.String()),
		slog.String("outbox_sweep_age", c.SweepAge.String()),
		slog.Int("outbox_sweep_limit", c.SweepLimit),
		slog.String("shutdown_grace", c.ShutdownGrace.String()),
		slog.String("shutdown_delay", c.ShutdownDelay.String()),
		slog.Bool("migrate_on_start", c.MigrateOnStart),
	)
}

// checkURL records the problem of name when parse rejects v; an empty v is
// left to required. The problem is parse's error, which says what is wrong
// (pgx redacts the password in its own), except an error of net/url: that
// quotes the whole URL, password included, so it is not shown.
func checkURL(p *envconf.Parser, name, v string, parse func(string) error) {
	if v == "" {
		return
	}
	var uerr *url.Error
	switch err := parse(v); {
	case err == nil:
	case errors.As(err, &uerr):
		p.Fail(name, "not a valid URL (the parse error is not shown: it quotes the password)")
	default:
		p.Fail(name, err.Error())
	}
}

func parseDatabaseURL(s string) error {
	_, err := pgxpool.ParseConfig(s)
	return err
}

// Error lists every configuration problem found.
type Error struct {
	Problems []string // "NAME: what is wrong", in the order found
}

func (e *Error) Error() string {
	return fmt.Sprintf("invalid configuration (%d problems):\n  %s", len(e.Problems), strings.Join(e.Problems, "\n  "))
}
