package compare

import (
	"fmt"
	"io"
	"strings"

	"github.com/oncepay/oncepay/pkg/idem/naive"
)

// The two variables a strategy sets (naive.Strategy): the boundary the api
// and the worker claim with, and the key the worker sends the psp.

// variables returns strategy's boundary and psp key, as the table shows
// them; "?" for a name that is not a strategy.
func variables(strategy string) (boundary, pspKey string) {
	if _, ok := PostgresRow(strategy); ok {
		return "oncepay", "propagated" // oncepay's own build
	}
	s, err := naive.ParseStrategy(strategy)
	if err != nil {
		return "?", "?"
	}
	pspKey = "propagated"
	if s.FreshPSPKey() {
		pspKey = "fresh per attempt"
	}
	switch s.Pattern() {
	case naive.StrategyAPIOnly:
		return "oncepay in the api, none in the worker", pspKey
	case naive.StrategyNoBackstop:
		return "oncepay, no UNIQUE key in Postgres", pspKey
	case naive.StrategyOff:
		return "none", pspKey
	}
	return string(s.Pattern()), pspKey
}

// contrast is two rows that differ in one variable.
type contrast struct {
	variable string
	from, to Row
}

// contrasts returns the pairs of rows that differ in one variable only, in
// table order: a pattern with a fresh psp key against the same pattern
// with the propagated key (what the key causes), a strategy with the
// propagated key against oncepay (what the boundary causes), and the
// asynchronous Postgres row against the synchronous one (what the
// replication causes).
func contrasts(rows []Row) []contrast {
	by := map[string]Row{}
	for _, r := range rows {
		by[r.Strategy] = r
	}
	var out []contrast
	for _, r := range rows {
		if async, ok := by[PatroniAsync]; ok && r.Strategy == PatroniSync {
			out = append(out, contrast{"replication (asynchronous → synchronous, same lagged Postgres failover)", async, r})
		}
		s, err := naive.ParseStrategy(r.Strategy)
		if err != nil {
			continue
		}
		if fresh, ok := by[string(s.Pattern())]; ok && s.Pattern() != s {
			out = append(out, contrast{"psp key (fresh per attempt → propagated)", fresh, r})
		}
		if ref, ok := by[string(naive.StrategyOncepay)]; ok && !s.Real() && !s.FreshPSPKey() && s != naive.StrategyNoBackstop {
			b, _ := variables(r.Strategy)
			out = append(out, contrast{"boundary (" + b + " → oncepay, same propagated key)", r, ref})
		}
	}
	return out
}

// WriteContrasts writes, as Markdown list items, what each variable
// changes: for every pair of rows that differ in one variable only, the
// violation columns of both. A pair whose counts fall from "from" to "to"
// shows what the variable causes, in this run.
func WriteContrasts(w io.Writer, rows []Row) error {
	var b strings.Builder
	_, cols := header(rows)
	for _, c := range contrasts(rows) {
		cells := make([]string, 0, len(cols))
		for _, col := range cols {
			cells = append(cells, fmt.Sprintf("%s %d → %d", col, c.from.Counts[col], c.to.Counts[col]))
		}
		fmt.Fprintf(&b, "- %s, `%s` → `%s`: %s\n", c.variable, c.from.Strategy, c.to.Strategy, strings.Join(cells, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
