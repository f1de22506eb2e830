package page

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/record"
	"github.com/oncepay/oncepay/loadtest/timeline"
	"github.com/oncepay/oncepay/loadtest/verify"
)

// Options tune Build.
type Options struct {
	// MaxStories caps the stories on the page (default 1000): the stories
	// a violation names come first, then those a fault hit in flight, then
	// the rest by how much happened to them (builder.stories). The page
	// says how many it left out.
	MaxStories int
	// Links are the run's other files, shown at the top of the page.
	Links []Link
}

// hitBefore and hitAfter bound the window around a fault in which a
// request cut off, refused, answered 503 or a psp call cancelled counts as
// hit by it (the cut-off window of invariant 6).
//
// A lease taken over counts as hit by the latest fault of a worker at
// least takeoverAfter before the takeover (the lease had to run out
// first), else by the latest such fault of Redis, else by the latest fault
// before it.
const (
	takeoverAfter = time.Second
	hitBefore     = 500 * time.Millisecond
	hitAfter      = 3 * time.Second
)

// Build gathers the page's data from a checked run and the services' log
// lines of its keys (ReadLogs; nil when there are none).
func Build(r verify.Report, s verify.Snapshot, logs []LogLine, opt Options) Data {
	if opt.MaxStories <= 0 {
		opt.MaxStories = 1000
	}
	d := Data{Kind: "run", RunID: r.RunID, Pass: r.Pass, Verdict: verdict(r), StartMS: r.Start.UnixMilli(),
		SpanMS: r.Span.Milliseconds(), Links: opt.Links, Repro: r.Repro}
	d.Summary = summary(r)
	d.Invariants = invariants(r, s)
	d.Series = series(r.Start, s)
	b := newBuilder(r, s)
	b.addAttempts()
	b.addPayments()
	b.addLogs(logs)
	b.addFaults(r.Faults)
	b.addViolations(r.Violations)
	d.Faults = b.faults
	d.Stories, d.StoriesTotal = b.stories(opt.MaxStories)
	d.Omitted = d.StoriesTotal - len(d.Stories)
	kept := map[string]bool{}
	for _, st := range d.Stories {
		kept[st.ID] = true
	}
	for i := range d.Faults {
		in := []string{}
		for _, id := range d.Faults[i].Stories {
			if kept[id] {
				in = append(in, id)
			}
		}
		d.Faults[i].Stories = in
	}
	return d
}

func verdict(r verify.Report) string {
	switch n := len(r.Violations); n {
	case 0:
		return "PASS"
	case 1:
		return "FAIL, 1 violation"
	default:
		return fmt.Sprintf("FAIL, %d violations", n)
	}
}

func summary(r verify.Report) []Fact {
	q := r.Requests
	f := []Fact{
		{"load", fmt.Sprintf("%s, %d logical requests, %d HTTP attempts (%d retries)", r.Span.Round(time.Second), q.Logical, q.Attempts, q.Retries)},
		{"answers", fmt.Sprintf("2xx %d (replayed %d) · 409 in flight %d · 422 key reused %d · 503 %d", q.ByClass[record.ClassOK], q.Replays, q.Conflicts, q.Mismatches, q.ByClass[record.ClassUnavailable])},
		{"transport", fmt.Sprintf("cut off in flight %d · refused %d · timed out %d", q.CutOff, q.Refused, q.Timeouts)},
		{"payments", fmt.Sprintf("%d: succeeded %d · failed %d · pending %d (dead-lettered %d)", r.Payments.Total, r.Payments.Succeeded, r.Payments.Failed, r.Payments.Pending, r.Payments.DeadLettered)},
		{"psp", fmt.Sprintf("%d calls (%s) -> %d effective charges", r.PSP.Calls, outcomes(r.PSP.ByOutcome), r.PSP.Charges)},
		{"drain", fmt.Sprintf("%s (limit %s), complete: %t", r.Drain.Took.Round(time.Second), r.Drain.Limit, r.Drain.Complete)},
		{"boundary", fmt.Sprintf("%d records: %d stages completed, %d pending with a live lease, %d pending past the lease", r.Boundary.Records, r.Boundary.Completed, r.Boundary.PendingLive, r.Boundary.PendingStale)},
		{"faults", fmt.Sprintf("%d, %d lease takeovers", len(r.Faults), len(r.Takeovers))},
	}
	return f
}

func outcomes(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	return strings.Join(parts, " · ")
}

// invariants lists every invariant with its evidence and violations.
func invariants(r verify.Report, s verify.Snapshot) []Invariant {
	texts := verify.Invariants()
	q := r.Requests
	published := 0
	for _, o := range s.Outbox {
		if o.Published {
			published++
		}
	}
	frozen := 0
	for _, f := range r.Faults {
		if f.Frozen && f.MidRequest != nil && *f.MidRequest {
			frozen++
		}
	}
	evidence := []string{
		1: fmt.Sprintf("%d 2xx answers against %d payment rows", q.ByClass[record.ClassOK], r.Payments.Total),
		2: fmt.Sprintf("%d keys answered, %d replays byte-identical to the first answer, %d reused keys refused with 422", len(s.Payments), q.Replays, q.Mismatches),
		3: fmt.Sprintf("%d psp calls (%s), %d effective charges, %d payments succeeded", r.PSP.Calls, outcomes(r.PSP.ByOutcome), r.PSP.Charges, r.Payments.Succeeded),
		4: fmt.Sprintf("succeeded %d · failed %d · pending %d · dead-lettered %d after a drain of %s", r.Payments.Succeeded, r.Payments.Failed, r.Payments.Pending, r.Payments.DeadLettered, r.Drain.Took.Round(time.Second)),
		5: fmt.Sprintf("%d boundary records, %d stages pending past their lease; outbox %d of %d rows published", r.Boundary.Records, r.Boundary.PendingStale, published, len(s.Outbox)),
		6: fmt.Sprintf("%d requests cut off in flight, %d lease takeovers, %d faults seen frozen mid-work, of %d faults", q.CutOff, len(r.Takeovers), frozen, len(r.Faults)),
		7: r.History.HistorySummary(),
	}
	var out []Invariant
	for n := 1; n < len(texts); n++ {
		inv := Invariant{N: n, Text: texts[n], OK: true, Checked: n != 6 || s.ExpectFaults}
		if n < len(evidence) {
			inv.Evidence = evidence[n]
		}
		for _, v := range r.Violations {
			if v.Invariant == n {
				inv.OK = false
				inv.Violations = append(inv.Violations, Violation{Kind: v.Kind, Detail: v.Detail, IDs: v.IDs})
			}
		}
		out = append(out, inv)
	}
	return out
}

// series buckets the run by second: timeline's counts, 409s and the
// latency percentiles.
func series(start time.Time, s verify.Snapshot) Series {
	var settled []time.Time
	for _, p := range s.Payments {
		if p.Status != "pending" {
			settled = append(settled, p.UpdatedAt)
		}
	}
	ts := timeline.Build(start, s.Attempts, settled)
	out := Series{OK: ts.OK, Errors: ts.Errors, Retries: ts.Retries, Settled: ts.Settled}
	n := len(ts.OK)
	out.Conflicts = make([]float64, n)
	lat := make([][]float64, n)
	for _, a := range s.Attempts {
		if a.Time().Before(start) {
			continue
		}
		i := int(a.Time().Sub(start) / time.Second)
		if i >= n {
			continue
		}
		if a.Class == record.ClassConflict {
			out.Conflicts[i]++
		}
		if a.Status != 0 {
			lat[i] = append(lat[i], float64(a.EndTime().Sub(a.Time()).Microseconds())/1000)
		}
	}
	out.P50, out.P95, out.P99 = make([]float64, n), make([]float64, n), make([]float64, n)
	for i, l := range lat {
		if len(l) == 0 {
			continue
		}
		sort.Float64s(l)
		out.P50[i], out.P95[i], out.P99[i] = pct(l, 0.50), pct(l, 0.95), pct(l, 0.99)
	}
	return out
}

// pct is the q-quantile of sorted xs (nearest rank), rounded to 0.1 ms.
func pct(xs []float64, q float64) float64 {
	i := int(float64(len(xs))*q+0.5) - 1
	i = max(0, min(i, len(xs)-1))
	return float64(int(xs[i]*10+0.5)) / 10
}

// faultLabel is how a fault is named on the timeline.
func faultLabel(f verify.Fault) string {
	if strings.HasPrefix(f.Target, "api-") || strings.HasPrefix(f.Target, "worker-") || f.Kind == "" {
		return string(f.Action) + " " + f.Target
	}
	return f.Kind
}
