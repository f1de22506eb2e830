package conform

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Report is the result of one Check.
type Report struct {
	Target string        `json:"target"` // method and URL
	Start  time.Time     `json:"start"`
	Took   time.Duration `json:"took_ns"`
	Rows   []Row         `json:"rows"`
	Storm  *StormReport  `json:"storm,omitempty"`
	OK     bool          `json:"ok"` // every applicable MUST and SHOULD row passed
}

// Failed returns the rows that failed at a deciding level.
func (r *Report) Failed() []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Failed() {
			out = append(out, row)
		}
	}
	return out
}

// Row returns the row with id, and whether there is one.
func (r *Report) Row(id string) (Row, bool) {
	for _, row := range r.Rows {
		if row.ID == id {
			return row, true
		}
	}
	return Row{}, false
}

// Check runs the matrix, then the storm and its history check, against
// tgt. The error wraps ErrUsage when tgt cannot be checked; a target that
// breaks rules is a Report with OK false, not an error.
func Check(ctx context.Context, tgt Target) (*Report, error) {
	t, err := tgt.withDefaults()
	if err != nil {
		return nil, err
	}
	progress := func(s string) {
		if t.Progress != nil {
			fmt.Fprintf(t.Progress, "conform: %s\n", s)
		}
	}
	rep := &Report{Target: t.Method + " " + t.URL, Start: time.Now()}
	m := &matrix{t: t, ctx: ctx}
	steps := []struct {
		name string
		run  func() []Row
	}{
		{"key required", func() []Row { return []Row{m.keyRequired()} }},
		{"malformed keys", func() []Row {
			return []Row{
				m.malformed("key-empty", "an empty key is refused with 400", ""),
				m.malformed("key-too-long", fmt.Sprintf("a key over the documented %d characters is refused with 400", t.MaxKeyLen), strings.Repeat("k", t.MaxKeyLen+1)),
				m.malformed("key-not-ascii", "a key with characters outside visible ASCII is refused with 400", "conform-k\u00e9y-"+newKey("x")[8:]),
				m.keyRepeated(),
			}
		}},
		{"quoted key", func() []Row { return []Row{m.keyQuoted()} }},
		{"replay", m.replays},
		{"another payload", m.otherPayload},
		{"concurrent duplicates", func() []Row { return []Row{m.concurrent()} }},
		{"key scope", func() []Row { return []Row{m.scope()} }},
		{"5xx not cached", func() []Row { return []Row{m.failNotCached()} }},
		{"key on GET", func() []Row { return []Row{m.getIgnored()} }},
		{"expiry policy", func() []Row { return []Row{m.expiry()} }},
	}
	for i, s := range steps {
		progress(fmt.Sprintf("matrix %d/%d: %s", i+1, len(steps), s.name))
		rep.Rows = append(rep.Rows, s.run()...)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	seen := m.all
	history := Row{ID: "history", Section: "2.6", Level: MUST, Rule: "the storm's history is linearizable: first accepted payload wins, replays identical, 422 only after another payload, one effect per key"}
	if t.Storm.Keys > 0 {
		progress(fmt.Sprintf("storm: %d keys x %d clients", t.Storm.Keys, t.Storm.Clients))
		rep.Storm = t.storm(ctx, progress)
		for _, a := range rep.Storm.history {
			seen = append(seen, a.Ex)
		}
		history = gradeHistory(history, rep.Storm, t.Effects != nil)
	} else {
		history = na(history, "no storm")
	}
	rep.Rows = append(rep.Rows, history, problemJSON(m.all), retryAfterRow(seen))
	rep.Took = time.Since(rep.Start)
	rep.OK = len(rep.Failed()) == 0
	progress(fmt.Sprintf("done in %s: %s", rep.Took.Round(time.Millisecond), map[bool]string{true: "pass", false: "FAIL"}[rep.OK]))
	return rep, nil
}

func gradeHistory(row Row, s *StormReport, effects bool) Row {
	v := s.Verdict
	switch {
	case len(s.ReadErrs) > 0:
		return fail(row, fmt.Sprintf("%d effect reads failed, e.g. %s", len(s.ReadErrs), s.ReadErrs[0]))
	case v.Result != "Ok":
		row = fail(row, fmt.Sprintf("%s: %d of %d keys have no legal order: %s", v.Result, len(v.FailingKeys), v.Keys, describeDiagnosis(v.Diagnosis)))
		for _, a := range s.history {
			if len(v.FailingKeys) > 0 && a.Key == v.FailingKeys[0] && len(row.Evidence) < 24 {
				row.Evidence = append(row.Evidence, a.Ex)
			}
		}
		return row
	}
	d := fmt.Sprintf("%d operations on %d keys are linearizable (checked in %s)", v.Operations, v.Keys, v.Took.Round(time.Millisecond))
	if !effects {
		d += "; no effect reader: once-only is judged from the answers alone"
	}
	return pass(row, d)
}

// Run checks tgt inside a go test: it fails t once per failing MUST or
// SHOULD row (naming the row and its evidence) and logs the table.
func Run(t testing.TB, tgt Target) *Report {
	t.Helper()
	rep, err := Check(context.Background(), tgt)
	if err != nil {
		t.Fatalf("conform: %v", err)
	}
	var b strings.Builder
	rep.WriteTable(&b)
	t.Log("\n" + b.String())
	for _, row := range rep.Failed() {
		var ev strings.Builder
		for _, ex := range row.Evidence {
			ev.WriteString("\n    " + ex.String())
		}
		t.Errorf("conform: %s (%s §%s) failed: %s%s", row.ID, row.Level, row.Section, row.Detail, ev.String())
	}
	return rep
}
