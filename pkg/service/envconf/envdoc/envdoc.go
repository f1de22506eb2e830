// Package envdoc checks a configuration reference written in Markdown
// against the variables a service reads, as its envconf.Parser recorded
// them (Vars), so that the reference cannot drift from the code: a service
// test runs the service's loader on an empty environment and fails on every
// difference Compare reports.
//
// A reference is a table of three columns under a heading:
//
//	### worker
//
//	| variable | default | meaning |
//	|---|---|---|
//	| `WORKER_PREFETCH` | `16` | basic.qos prefetch |
//	| `REDIS_URL` | required | boundary Redis |
//	| `WORKER_PPROF_ADDR` | unset | ... |
//	| `WORKER_MAX_HOLD` | 4 × `IDEM_LEASE` | ... |
//
// Backticks are ignored. The default reads as envconf.Var writes it
// (durations compactly: 10s, 5m, 24h, 500ms), "required" for a required
// variable and "unset" for an empty default.
package envdoc

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/oncepay/oncepay/pkg/service/envconf"
)

// A Row is one row of a reference table, its cells without backticks.
type Row struct {
	Name, Default, Meaning string
	Line                   int // in the Markdown file, from 1
}

// Table returns the rows of the first table after the first heading (of any
// level) whose text, without backticks, is heading. It fails when there is
// no such heading, when another heading comes before a table, or when a row
// has fewer than three cells.
func Table(markdown []byte, heading string) ([]Row, error) {
	sc := bufio.NewScanner(bytes.NewReader(markdown))
	sc.Buffer(nil, 1<<20)
	const (
		seeking = iota // the heading
		before         // the table
		header         // its separator row
		rows
	)
	state, n := seeking, 0
	var out []Row
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		isHeading := strings.HasPrefix(line, "#")
		isRow := strings.HasPrefix(line, "|")
		switch state {
		case seeking:
			if isHeading && unquote(strings.TrimLeft(line, "#")) == heading {
				state = before
			}
		case before:
			if isHeading {
				return nil, fmt.Errorf("heading %q: no table before the next heading (line %d)", heading, n)
			}
			if isRow {
				state = header
			}
		case header:
			state = rows
		case rows:
			if !isRow {
				return out, nil
			}
			cells := split(line)
			if len(cells) < 3 {
				return nil, fmt.Errorf("line %d: %d cells, want variable | default | meaning", n, len(cells))
			}
			out = append(out, Row{Name: cells[0], Default: cells[1], Meaning: strings.Join(cells[2:], " | "), Line: n})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if state == seeking {
		return nil, fmt.Errorf("no heading %q", heading)
	}
	if state == before {
		return nil, fmt.Errorf("heading %q: no table", heading)
	}
	return out, nil
}

// split returns the cells of a table row, split at pipes not escaped with a
// backslash, each trimmed and without backticks.
func split(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cell.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, unquote(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(line[i])
		}
	}
	return append(cells, unquote(cell.String()))
}

func unquote(s string) string { return strings.TrimSpace(strings.ReplaceAll(s, "`", "")) }

// Compare returns one line per difference between the variables the code
// reads and the rows that document them, or nil when they agree: a variable
// with no row, a row for a variable the code does not read, a default that
// differs, a row without a meaning, a variable in two rows. Lines are
// sorted by variable name. The order of the rows does not matter.
func Compare(vars []envconf.Var, rows []Row) []string {
	var diffs []string
	documented := make(map[string]Row, len(rows))
	for _, r := range rows {
		if first, dup := documented[r.Name]; dup {
			diffs = append(diffs, fmt.Sprintf("%s: two rows (lines %d and %d)", r.Name, first.Line, r.Line))
			continue
		}
		documented[r.Name] = r
		if r.Meaning == "" {
			diffs = append(diffs, fmt.Sprintf("%s: no meaning (line %d)", r.Name, r.Line))
		}
	}
	read := make(map[string]bool, len(vars))
	for _, v := range vars {
		read[v.Name] = true
		want := Default(v)
		r, ok := documented[v.Name]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: read by the code (default %s) but not documented", v.Name, want))
		case r.Default != want:
			diffs = append(diffs, fmt.Sprintf("%s: documented default %q (line %d), the code's is %q", v.Name, r.Default, r.Line, want))
		}
	}
	for _, r := range rows {
		if !read[r.Name] {
			diffs = append(diffs, fmt.Sprintf("%s: documented (line %d) but not read by the code", r.Name, r.Line))
		}
	}
	slices.SortStableFunc(diffs, func(a, b string) int {
		return strings.Compare(a[:strings.IndexByte(a, ':')], b[:strings.IndexByte(b, ':')])
	})
	return diffs
}

// Default is how a reference writes the default of v: "required", "unset"
// for an empty default, else v.Default.
func Default(v envconf.Var) string {
	switch {
	case v.Required:
		return "required"
	case v.Default == "":
		return "unset"
	}
	return v.Default
}
