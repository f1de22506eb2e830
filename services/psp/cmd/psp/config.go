package main

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncepay/oncepay/pkg/service/envconf"
	"github.com/oncepay/oncepay/pkg/service/pgpool"
	"github.com/oncepay/oncepay/services/psp/internal/faults"
)

// config is everything psp reads from its environment, read once by run.
// The defaults are in load, and docs/configuration.md lists every variable
// with its default (TestConfigurationDoc keeps the two alike).
type config struct {
	ListenAddr string // PSP_LISTEN_ADDR: charges
	OpsAddr    string // PSP_OPS_ADDR: /livez, /readyz, /metrics
	// AdminAddr is the admin listener (PSP_ADMIN_ADDR; "" serves no admin
	// API), AdminToken its bearer token (PSP_ADMIN_TOKEN, required with
	// AdminAddr, never logged).
	AdminAddr   string
	AdminToken  string
	DatabaseURL string // PSP_DATABASE_URL, required
	// PG is the session timeouts of the database pool (PSP_PG_STATEMENT_TIMEOUT,
	// PSP_PG_LOCK_TIMEOUT, PSP_PG_IDLE_IN_TRANSACTION_TIMEOUT; pgpool.Defaults).
	PG             pgpool.Timeouts
	Knobs          faults.Knobs  // PSP_LATENCY, PSP_LATENCY_JITTER, PSP_*_RATE, PSP_IDEMPOTENCY, PSP_SEED
	ShutdownGrace  time.Duration // PSP_SHUTDOWN_GRACE
	MigrateOnStart bool          // PSP_MIGRATE_ON_START
	LogLevel       slog.Level    // LOG_LEVEL: debug, info, warn, error
}

// minAdminToken is the shortest PSP_ADMIN_TOKEN accepted.
const minAdminToken = 16

// knobEnv names the variable behind a fault knob's JSON name, for error messages.
func knobEnv(knob string) string {
	switch knob {
	case "latency_ms":
		return "PSP_LATENCY"
	case "latency_jitter_ms":
		return "PSP_LATENCY_JITTER"
	}
	return "PSP_" + strings.ToUpper(knob) // fail_before_rate -> PSP_FAIL_BEFORE_RATE
}

// loadConfig reads the configuration through getenv. It reports every
// problem found, not just the first; now seeds the fault RNG when PSP_SEED
// is unset.
func loadConfig(getenv func(string) string, now time.Time) (config, error) {
	p := envconf.New(getenv)
	c := load(p, now)
	if err := p.Err(); err != nil {
		return config{}, err
	}
	return c, nil
}

// load reads and checks the configuration through p, recording its
// problems in p. It reads every variable whatever the others hold, so that
// p.Vars lists them all (see TestConfigurationDoc).
func load(p *envconf.Parser, now time.Time) config {
	c := config{
		ListenAddr:     p.String("PSP_LISTEN_ADDR", "127.0.0.1:8090"),
		OpsAddr:        p.String("PSP_OPS_ADDR", "127.0.0.1:8091"),
		AdminAddr:      p.String("PSP_ADMIN_ADDR", ""),
		AdminToken:     p.String("PSP_ADMIN_TOKEN", ""),
		DatabaseURL:    p.Required("PSP_DATABASE_URL"),
		PG:             pgpool.Read(p, "PSP_"),
		ShutdownGrace:  p.Duration("PSP_SHUTDOWN_GRACE", 10*time.Second),
		MigrateOnStart: p.Bool("PSP_MIGRATE_ON_START", true),
		LogLevel:       p.Level("LOG_LEVEL", slog.LevelInfo),
	}
	d := faults.Defaults()
	c.Knobs = faults.Knobs{
		LatencyMS:       millis(p, "PSP_LATENCY", time.Duration(d.LatencyMS)*time.Millisecond),
		LatencyJitterMS: millis(p, "PSP_LATENCY_JITTER", time.Duration(d.LatencyJitterMS)*time.Millisecond),
		FailBeforeRate:  p.Float64("PSP_FAIL_BEFORE_RATE", 0),
		FailAfterRate:   p.Float64("PSP_FAIL_AFTER_RATE", 0),
		ErrorRate:       p.Float64("PSP_ERROR_RATE", 0),
		Idempotency:     p.Bool("PSP_IDEMPOTENCY", d.Idempotency),
		Seed:            p.Int64("PSP_SEED", now.UnixNano()),
	}
	p.DescribeDefault("PSP_SEED", "the start time")

	if c.DatabaseURL == "" {
		p.Fail("PSP_DATABASE_URL", "is required")
	} else if _, err := pgxpool.ParseConfig(c.DatabaseURL); err != nil {
		p.Fail("PSP_DATABASE_URL", "is not a valid Postgres URL") // the error would echo the URL
	}
	if c.ListenAddr == "" {
		p.Fail("PSP_LISTEN_ADDR", "must not be empty")
	}
	if c.OpsAddr == "" {
		p.Fail("PSP_OPS_ADDR", "must not be empty")
	} else if c.OpsAddr == c.ListenAddr && !strings.HasSuffix(c.OpsAddr, ":0") {
		p.Fail("PSP_OPS_ADDR", "must differ from PSP_LISTEN_ADDR: the ops endpoints never share the charges port")
	}
	switch {
	case c.AdminAddr == "" && c.AdminToken != "":
		p.Fail("PSP_ADMIN_TOKEN", "is set but PSP_ADMIN_ADDR is not: set both to serve the admin API")
	case c.AdminAddr == "":
	case (c.AdminAddr == c.ListenAddr || c.AdminAddr == c.OpsAddr) && !strings.HasSuffix(c.AdminAddr, ":0"):
		p.Fail("PSP_ADMIN_ADDR", "must differ from PSP_LISTEN_ADDR and PSP_OPS_ADDR: the admin API has a listener of its own")
	case c.AdminToken == "":
		p.Fail("PSP_ADMIN_TOKEN", "is required with PSP_ADMIN_ADDR (there is no default token)")
	case len(c.AdminToken) < minAdminToken:
		p.Fail("PSP_ADMIN_TOKEN", fmt.Sprintf("must be at least %d characters (e.g. openssl rand -hex 32)", minAdminToken))
	}
	if c.ShutdownGrace <= 0 {
		p.Fail("PSP_SHUTDOWN_GRACE", "must be positive")
	}
	problems := c.Knobs.Valid()
	for _, name := range slices.Sorted(maps.Keys(problems)) {
		if !p.Failed(knobEnv(name)) {
			p.Fail(knobEnv(name), strings.ReplaceAll(problems[name], " milliseconds", "ms"))
		}
	}
	return c
}

// millis reads a duration that must be a whole number of milliseconds and
// returns it in milliseconds; def when name is unset.
func millis(p *envconf.Parser, name string, def time.Duration) int64 {
	d := p.Duration(name, def)
	if d%time.Millisecond != 0 {
		p.Fail(name, fmt.Sprintf("%s is not a whole number of milliseconds", d))
	}
	return d.Milliseconds()
}
