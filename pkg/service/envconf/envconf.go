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
//
// A Parser also records every variable it is asked for, with its default
// as a person writes it (Vars). A service that reads every variable
// unconditionally lists its whole configuration by running its loader on
// an empty environment; its tests compare that list with the documented
// one (package envdoc).
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
// collects a problem for every variable that does not parse. A variable
// that is unset, empty or only white space takes its default. A variable
// that does not parse also yields its default, so the caller can keep
// reading; Err reports the problem. Every read (String, Required, Lookup,
// Parse and the typed methods) records the variable and its default in
// Vars.
//
// A Parser is not safe for concurrent use; the zero value is not usable, make
// one with New.
type Parser struct {
	getenv    func(string) string
	problems  []Problem
	vars      []Var
	described map[string]string // name -> its default in words (DescribeDefault)
}

// A Problem is what is wrong with one variable. Its Error reads
// "<Name> <Msg>", as in Err.
type Problem struct {
	Name string // the variable, e.g. "PORT"
	Msg  string // what is wrong with it, e.g. "must not be empty"
}

// Error returns "<Name> <Msg>", e.g. "PORT must not be empty".
func (pr Problem) Error() string { return pr.Name + " " + pr.Msg }

// New returns a Parser that reads variables through getenv (os.Getenv in
// production, a map lookup in tests).
func New(getenv func(string) string) *Parser {
	return &Parser{getenv: getenv}
}

// Fail records the problem "<name> <msg>", e.g. Fail("PORT", "must not be
// empty"). Problems are reported in the order they were recorded.
func (p *Parser) Fail(name, msg string) {
	p.problems = append(p.problems, Problem{Name: name, Msg: msg})
}

// Failed reports whether a problem has been recorded for name, so that a
// check between variables can skip one that is already reported.
func (p *Parser) Failed(name string) bool {
	return slices.ContainsFunc(p.problems, func(pr Problem) bool { return pr.Name == name })
}

// Problems returns a copy of the problems recorded so far, in the order they
// were recorded, or nil when there are none: for a service that reports them
// in a form of its own instead of through Err.
func (p *Parser) Problems() []Problem { return slices.Clone(p.problems) }

// Err returns nil when no problem was recorded, else one error that reads
// "configuration: " followed by every problem, one per line, in the order
// they were recorded. errors.Join is used, so each problem is also reachable
// through the error's Unwrap() []error, as a Problem.
func (p *Parser) Err() error {
	if len(p.problems) == 0 {
		return nil
	}
	errs := make([]error, len(p.problems))
	for i, pr := range p.problems {
		errs[i] = pr
	}
	return fmt.Errorf("configuration: %w", errors.Join(errs...))
}

// String returns the value of name with surrounding white space trimmed, or
// def when that is empty. It records no problem.
func (p *Parser) String(name, def string) string {
	if v := Lookup(p, name, def); v != "" {
		return v
	}
	return def
}

// Required returns the value of name with surrounding white space trimmed,
// or "" when that is empty, and records name in Vars as required: it has no
// default. It records no problem: the caller reports an unset variable in
// its own words, e.g. Fail(name, "is required").
func (p *Parser) Required(name string) string {
	v := p.lookup(name)
	p.record(Var{Name: name, Required: true})
	return v
}

// Lookup returns the value of name with surrounding white space trimmed, or
// "" when that is empty, and records name with def in Vars. It is for a
// variable a service reads in a form of its own, such as a list or a value
// checked with messages of its own: the caller converts the value, takes
// def when it is "", and reports problems with Fail.
func Lookup[T any](p *Parser, name string, def T) string {
	p.record(Var{Name: name, Default: formatDefault(def)})
	return p.lookup(name)
}

func (p *Parser) lookup(name string) string { return strings.TrimSpace(p.getenv(name)) }

// Duration returns name parsed by time.ParseDuration, or def when it is
// unset. It does not check the sign: a service that needs a positive
// duration checks it itself.
func (p *Parser) Duration(name string, def time.Duration) time.Duration {
	return Parse(p, name, def, time.ParseDuration, "a duration like 500ms or 15s")
}

// Positive returns name as an int of at least 1, or def when it is unset.
func (p *Parser) Positive(name string, def int) int {
	return Parse(p, name, def, func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err == nil && n < 1 {
			err = errors.New("not positive")
		}
		return n, err
	}, "a positive integer")
}

// Int64 returns name as a base-10 int64, or def when it is unset.
func (p *Parser) Int64(name string, def int64) int64 {
	return Parse(p, name, def, func(v string) (int64, error) { return strconv.ParseInt(v, 10, 64) }, "a 64-bit integer")
}

// Float64 returns name parsed by strconv.ParseFloat, or def when it is unset.
// It does not check the range.
func (p *Parser) Float64(name string, def float64) float64 {
	return Parse(p, name, def, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) }, "a number")
}

// Bool returns name parsed by strconv.ParseBool (true, false, 1, 0, t, f,
// TRUE, False, ...), or def when it is unset.
func (p *Parser) Bool(name string, def bool) bool {
	return Parse(p, name, def, strconv.ParseBool, "a boolean (true/false)")
}

// Level returns name as a slog.Level (debug, info, warn, error in any case,
// optionally with an offset such as warn+2), or def when it is unset.
func (p *Parser) Level(name string, def slog.Level) slog.Level {
	return Parse(p, name, def, func(v string) (slog.Level, error) {
		var l slog.Level
		err := l.UnmarshalText([]byte(v))
		return l, err
	}, "a level (debug, info, warn, error)")
}

// Parse returns name converted by conv, or def when it is unset, empty or
// only white space; conv gets the value with surrounding white space
// trimmed. When conv fails, Parse records the problem
// "<name> <quoted value> is not <what>", e.g. `PORT "x" is not a port
// number`, and returns def.
//
// The typed methods of Parser are Parse with a conversion and a wording of
// their own. Use Parse for a type they do not read, or to word differently
// what a value should be. The value is quoted in the problem, so do not
// Parse a variable that may hold a secret.
func Parse[T any](p *Parser, name string, def T, conv func(string) (T, error), what string) T {
	v := Lookup(p, name, def)
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
