package main

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncepay/oncepay/services/psp/internal/faults"
)

// config is everything psp reads from its environment, read once by run.
type config struct {
	ListenAddr     string        // PSP_LISTEN_ADDR, default 127.0.0.1:8090
	DatabaseURL    string        // PSP_DATABASE_URL, required
	Knobs          faults.Knobs  // PSP_LATENCY, PSP_LATENCY_JITTER, PSP_*_RATE, PSP_IDEMPOTENCY, PSP_SEED
	ShutdownGrace  time.Duration // PSP_SHUTDOWN_GRACE, default 10s
	MigrateOnStart bool          // PSP_MIGRATE_ON_START, default true
	LogLevel       slog.Level    // LOG_LEVEL: debug, info (default), warn, error
}

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
	p := envParser{getenv: getenv}
	c := config{
		ListenAddr:     p.str("PSP_LISTEN_ADDR", "127.0.0.1:8090"),
		DatabaseURL:    p.str("PSP_DATABASE_URL", ""),
		ShutdownGrace:  p.duration("PSP_SHUTDOWN_GRACE", 10*time.Second),
		MigrateOnStart: p.boolean("PSP_MIGRATE_ON_START", true),
		LogLevel:       p.level("LOG_LEVEL", slog.LevelInfo),
	}
	d := faults.Defaults()
	c.Knobs = faults.Knobs{
		LatencyMS:       p.millis("PSP_LATENCY", time.Duration(d.LatencyMS)*time.Millisecond),
		LatencyJitterMS: p.millis("PSP_LATENCY_JITTER", time.Duration(d.LatencyJitterMS)*time.Millisecond),
		FailBeforeRate:  p.float("PSP_FAIL_BEFORE_RATE", 0),
		FailAfterRate:   p.float("PSP_FAIL_AFTER_RATE", 0),
		ErrorRate:       p.float("PSP_ERROR_RATE", 0),
		Idempotency:     p.boolean("PSP_IDEMPOTENCY", d.Idempotency),
		Seed:            p.integer("PSP_SEED", now.UnixNano()),
	}

	if c.DatabaseURL == "" {
		p.fail("PSP_DATABASE_URL", "is required")
	} else if _, err := pgxpool.ParseConfig(c.DatabaseURL); err != nil {
		p.fail("PSP_DATABASE_URL", "is not a valid Postgres URL") // the error would echo the URL
	}
	if c.ListenAddr == "" {
		p.fail("PSP_LISTEN_ADDR", "must not be empty")
	}
	if c.ShutdownGrace <= 0 {
		p.fail("PSP_SHUTDOWN_GRACE", "must be positive")
	}
	problems := c.Knobs.Valid()
	for _, name := range slices.Sorted(maps.Keys(problems)) {
		if !p.failed(knobEnv(name)) {
			p.fail(knobEnv(name), strings.ReplaceAll(problems[name], " milliseconds", "ms"))
		}
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

func (p *envParser) duration(name string, def time.Duration) time.Duration {
	v := p.str(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		p.fail(name, fmt.Sprintf("%q is not a duration like 250ms or 10s", v))
		return def
	}
	return d
}

func (p *envParser) millis(name string, def time.Duration) int64 {
	d := p.duration(name, def)
	if d%time.Millisecond != 0 {
		p.fail(name, fmt.Sprintf("%s is not a whole number of milliseconds", d))
	}
	return d.Milliseconds()
}

func (p *envParser) float(name string, def float64) float64 {
	v := p.str(name, "")
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		p.fail(name, fmt.Sprintf("%q is not a number", v))
		return def
	}
	return f
}

func (p *envParser) integer(name string, def int64) int64 {
	v := p.str(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		p.fail(name, fmt.Sprintf("%q is not a 64-bit integer", v))
		return def
	}
	return n
}

func (p *envParser) boolean(name string, def bool) bool {
	v := p.str(name, "")
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		p.fail(name, fmt.Sprintf("%q is not a boolean (true/false)", v))
		return def
	}
	return b
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
