package config

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// reader reads variables and collects the problems it finds, so that one
// pass reports all of them.
type reader struct {
	getenv   func(string) string
	problems []string
}

func (r *reader) problem(name, format string, args ...any) {
	r.problems = append(r.problems, name+": "+fmt.Sprintf(format, args...))
}

func (r *reader) err() error {
	if len(r.problems) == 0 {
		return nil
	}
	return &Error{Problems: r.problems}
}

// lookup returns the trimmed value of name; empty means unset.
func (r *reader) lookup(name string) string { return strings.TrimSpace(r.getenv(name)) }

func (r *reader) str(name, def string) string {
	if v := r.lookup(name); v != "" {
		return v
	}
	return def
}

func (r *reader) required(name string) string {
	v := r.lookup(name)
	if v == "" {
		r.problem(name, "required, not set")
	}
	return v
}

// duration reads a positive Go duration ("500ms", "10s", "24h").
func (r *reader) duration(name string, def time.Duration) time.Duration {
	return r.durationMin(name, def, time.Nanosecond)
}

// durationMin reads a Go duration of at least lowest.
func (r *reader) durationMin(name string, def, lowest time.Duration) time.Duration {
	v := r.lookup(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		r.problem(name, "%q is not a duration such as 500ms, 10s or 24h", v)
		return def
	case d < lowest && lowest > 0:
		r.problem(name, "%s must be positive", d)
		return def
	case d < lowest:
		r.problem(name, "%s must not be negative", d)
		return def
	}
	return d
}

// positive reads an integer of at least 1.
func (r *reader) positive(name string, def int) int {
	v := r.lookup(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		r.problem(name, "%q is not a positive integer", v)
		return def
	}
	return n
}

func (r *reader) boolean(name string, def bool) bool {
	v := r.lookup(name)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.problem(name, "%q is not a boolean (true or false)", v)
		return def
	}
	return b
}

func (r *reader) level() slog.Level {
	var l slog.Level
	v := r.lookup("LOG_LEVEL")
	if v == "" {
		return slog.LevelInfo
	}
	if err := l.UnmarshalText([]byte(v)); err != nil {
		r.problem("LOG_LEVEL", "%q is not one of debug, info, warn, error", v)
		return slog.LevelInfo
	}
	return l
}

func (r *reader) instance(hostname string) string {
	v := r.str("API_INSTANCE", hostname)
	if v == "" || len(v) > 64 || strings.ContainsFunc(v, func(c rune) bool { return c <= ' ' || c > '~' }) {
		r.problem("API_INSTANCE", "%q must be 1-64 visible ASCII characters (default: the host name)", v)
	}
	return v
}
