package config

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/oncepay/oncepay/pkg/service/envconf"
)

// The api reads its variables through an *envconf.Parser; these helpers add
// what it reads in its own way: required values, durations with a lower
// bound, and its wording of what a value should be.

// errorOf returns nil when p recorded no problem, else an *Error listing
// every problem as "NAME: what is wrong".
func errorOf(p *envconf.Parser) error {
	problems := p.Problems()
	if len(problems) == 0 {
		return nil
	}
	e := &Error{Problems: make([]string, len(problems))}
	for i, pr := range problems {
		e.Problems[i] = pr.Name + ": " + pr.Msg
	}
	return e
}

func required(p *envconf.Parser, name string) string {
	v := p.Required(name)
	if v == "" {
		p.Fail(name, "required, not set")
	}
	return v
}

// duration reads a positive Go duration ("500ms", "10s", "24h").
func duration(p *envconf.Parser, name string, def time.Duration) time.Duration {
	return durationMin(p, name, def, time.Nanosecond)
}

// durationMin reads a Go duration of at least lowest.
func durationMin(p *envconf.Parser, name string, def, lowest time.Duration) time.Duration {
	d := envconf.Parse(p, name, def, time.ParseDuration, "a duration such as 500ms, 10s or 24h")
	switch {
	case d >= lowest:
		return d
	case lowest > 0:
		p.Fail(name, fmt.Sprintf("%s must be positive", d))
	default:
		p.Fail(name, fmt.Sprintf("%s must not be negative", d))
	}
	return def
}

func boolean(p *envconf.Parser, name string, def bool) bool {
	return envconf.Parse(p, name, def, strconv.ParseBool, "a boolean (true or false)")
}

func level(p *envconf.Parser) slog.Level {
	return envconf.Parse(p, "LOG_LEVEL", slog.LevelInfo, func(v string) (slog.Level, error) {
		var l slog.Level
		err := l.UnmarshalText([]byte(v))
		return l, err
	}, "one of debug, info, warn, error")
}

func instance(p *envconf.Parser, hostname string) string {
	v := p.String("API_INSTANCE", hostname)
	p.DescribeDefault("API_INSTANCE", "the host name")
	if v == "" || len(v) > 64 || strings.ContainsFunc(v, func(c rune) bool { return c <= ' ' || c > '~' }) {
		p.Fail("API_INSTANCE", fmt.Sprintf("%q must be 1-64 visible ASCII characters (default: the host name)", v))
	}
	return v
}
