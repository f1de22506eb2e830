// Package envconf reads a service's configuration from its environment and
// reports every problem at once, not just the first, so that an operator
// fixes a bad deployment in one round.
//
// A service makes one Parser in its run function, reads each variable
// through it, adds its own checks with Fail, and returns Err:
//
//	p := envconf.New(getenv)
//	addr := p.String("LISTEN_ADDR", "127.0.0.1:8080")
//	grace := p.Duration("SHUTDOWN_GRACE", 10*time.Second)
//	if grace <= 0 && !p.Failed("SHUTDOWN_GRACE") {
//		p.Fail("SHUTDOWN_GRACE", "must be positive")
//	}
//	if err := p.Err(); err != nil {
//		return err
//	}
//
// Every problem reads "<NAME> <what is wrong>". Values are quoted in
// problems, so a variable that may hold a secret (a URL with a password)
// must be checked by the caller with Fail and a message that does not echo
// it.
package envconf

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Parser reads typed environment variables through a getenv function and
// collects a problem for every variable that does not parse. A variable that
// is unset, empty or only white space takes its default. A variable that does
// not parse also yields its default, so the caller can keep reading; Err
// reports the problem.
//
// A Parser is not safe for concurrent use; the zero value is not usable, make
// one with New.
type Parser struct {
	getenv   func(string) string
	problems []error
	bad      []string
}

// New returns a Parser that reads variables through getenv (os.Getenv in
// production, a map lookup in tests).
func New(getenv func(string) string) *Parser {
	return &Parser{getenv: getenv}
}

// Fail records the problem "<name> <msg>", e.g. Fail("PORT", "must not be
// empty"). Problems are reported in the order they were recorded.
func (p *Parser) Fail(name, msg string) {
	p.bad = append(p.bad, name)
	p.problems = append(p.problems, fmt.Errorf("%s %s", name, msg))
}

// Failed reports whether a problem has been recorded for name, so that a
// check between variables can skip one that is already reported.
func (p *Parser) Failed(name string) bool { return slices.Contains(p.bad, name) }

// Err returns nil when no problem was recorded, else one error that reads
// "configuration: " followed by every problem, one per line, in the order
// they were recorded. errors.Join is used, so each problem is also reachable
// through the error's Unwrap() []error.
func (p *Parser) Err() error {
	if len(p.problems) == 0 {
		return nil
	}
	return fmt.Errorf("configuration: %w", errors.Join(p.problems...))
}

// String returns the value of name with surrounding white space trimmed, or
// def when that is empty. It records no problem.
func (p *Parser) String(name, def string) string {
	if v := strings.TrimSpace(p.getenv(name)); v != "" {
		return v
	}
	return def
}

// Duration returns name parsed by time.ParseDuration, or def when it is
// unset. It does not check the sign: a service that needs a positive
// duration checks it itself.
func (p *Parser) Duration(name string, def time.Duration) time.Duration {
	return parse(p, name, def, time.ParseDuration, "a duration like 500ms or 15s")
}

// Positive returns name as an int of at least 1, or def when it is unset.
func (p *Parser) Positive(name string, def int) int {
	return parse(p, name, def, func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err == nil && n < 1 {
			err = errors.New("not positive")
		}
		return n, err
	}, "a positive integer")
}

// Int64 returns name as a base-10 int64, or def when it is unset.
func (p *Parser) Int64(name string, def int64) int64 {
	return parse(p, name, def, func(v string) (int64, error) { return strconv.ParseInt(v, 10, 64) }, "a 64-bit integer")
}

// Float64 returns name parsed by strconv.ParseFloat, or def when it is unset.
// It does not check the range.
func (p *Parser) Float64(name string, def float64) float64 {
	return parse(p, name, def, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) }, "a number")
}

// Bool returns name parsed by strconv.ParseBool (true, false, 1, 0, t, f,
// TRUE, False, ...), or def when it is unset.
func (p *Parser) Bool(name string, def bool) bool {
	return parse(p, name, def, strconv.ParseBool, "a boolean (true/false)")
}

// Level returns name as a slog.Level (debug, info, warn, error in any case,
// optionally with an offset such as warn+2), or def when it is unset.
func (p *Parser) Level(name string, def slog.Level) slog.Level {
	return parse(p, name, def, func(v string) (slog.Level, error) {
		var l slog.Level
		err := l.UnmarshalText([]byte(v))
		return l, err
	}, "a level (debug, info, warn, error)")
}

// parse returns name converted by conv, or def when it is unset. When conv
// fails it records the problem "<name> <quoted value> is not <what>" and
// returns def.
func parse[T any](p *Parser, name string, def T, conv func(string) (T, error), what string) T {
	v := p.String(name, "")
	if v == "" {
		return def
	}
	x, err := conv(v)
	if err != nil {
		p.Fail(name, fmt.Sprintf("%q is not %s", v, what))
		return def
	}
	return x
}
