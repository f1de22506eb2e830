package envconf

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// A Var is a variable a Parser was asked for, as a configuration reference
// lists it.
type Var struct {
	Name string // e.g. "IDEM_LEASE"
	// Default is the default as a person writes it: "10s", "5m", "24h",
	// "500ms", "1s,5s,30s", "info", "true", "127.0.0.1:8080", or the words
	// given to DescribeDefault; "" for an empty default and for a required
	// variable.
	Default  string
	Required bool // read with Required: there is no default
}

// Vars returns every variable read so far through p (String, Required,
// Lookup, Parse and the typed methods), each once, in the order first read,
// with the default of that first read. It lists a service's configuration
// only if the service reads every variable whatever the others hold: a
// variable read only when another is set is missing from the Vars of an
// empty environment.
func (p *Parser) Vars() []Var {
	out := make([]Var, len(p.vars))
	for i, v := range p.vars {
		if words, ok := p.described[v.Name]; ok {
			v.Default = words
		}
		out[i] = v
	}
	return out
}

// DescribeDefault sets how Vars writes the default of name: in words, for a
// default that is not a constant, such as "the host name" or
// "4 × IDEM_LEASE". It may be called before or after name is read, and it
// does not change the value read.
func (p *Parser) DescribeDefault(name, words string) {
	if p.described == nil {
		p.described = make(map[string]string)
	}
	p.described[name] = words
}

// record adds v to Vars unless its name was read before.
func (p *Parser) record(v Var) {
	if !slices.ContainsFunc(p.vars, func(w Var) bool { return w.Name == v.Name }) {
		p.vars = append(p.vars, v)
	}
}

// formatDefault writes def as a person would: durations compactly (5m, not
// 5m0s), a list of durations comma-separated, a level in lower case.
func formatDefault(def any) string {
	switch d := def.(type) {
	case time.Duration:
		return compactDuration(d)
	case []time.Duration:
		parts := make([]string, len(d))
		for i, x := range d {
			parts[i] = compactDuration(x)
		}
		return strings.Join(parts, ",")
	case slog.Level:
		return strings.ToLower(d.String())
	}
	return fmt.Sprint(def)
}

// compactDuration is d.String() without zero minutes and seconds after a
// larger unit: 5m, 24h, 1h30m; 1m30s, 500ms and 0s as they are.
func compactDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
