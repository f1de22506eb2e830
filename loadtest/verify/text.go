package verify

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/record"
)

// invariants are the one-line statements of the checked invariants, by number.
var invariants = []string{
	1: "every 2xx the client saw maps to one payment row, same id and amount",
	2: "one payment per (merchant, key); every replay byte-identical",
	3: "at most one effective charge per payment; succeeded <=> charged once",
	4: "every payment of the run terminal after the drain; none dead-lettered",
	5: "no boundary record PENDING past its lease; outbox fully published",
	6: "faults landed mid-request (cut-offs, takeovers, work seen frozen)",
	7: "every key's history linearizable against the model (porcupine)",
	8: "goodput back after every fault in its bound; no key blocked",
}

// Invariants returns the one-line statements of the checked invariants;
// index i holds invariant i (index 0 is empty).
func Invariants() []string { return append([]string(nil), invariants...) }

// HistorySummary is invariant 7's verdict on one line.
func (h History) HistorySummary() string { return h.summary() }

// Describe is a fault on one line, as the text report prints it.
func Describe(e fault.Event) string { return describe(e) }

// WriteText writes r for people: counts, faults, takeovers, one line per
// invariant, and every violation with its ids.
func (r Report) WriteText(w io.Writer) error {
	p := &printer{w: w}
	verdict := "PASS"
	if !r.Pass {
		verdict = fmt.Sprintf("FAIL (%d violation%s)", len(r.Violations), plural(len(r.Violations)))
	}
	p.f("oncepay fault test, run %s: %s\n\n", r.RunID, verdict)

	q := r.Requests
	p.f("load       %s, %d logical requests, %d HTTP attempts (%d retries)\n", r.Span.Round(time.Second), q.Logical, q.Attempts, q.Retries)
	p.f("  outcomes   %s\n", counts(q.ByOutcome, []record.Outcome{record.OutcomeOK, record.OutcomeRejected, record.OutcomeGaveUp}))
	p.f("  scenarios  %s\n", counts(q.ByScenario, nil))
	p.f("  answers    2xx %d (replayed %d) · 409 in flight %d · 422 key reused %d · 503 %d · other 5xx %d · other 4xx %d\n",
		q.ByClass[record.ClassOK], q.Replays, q.Conflicts, q.Mismatches, q.ByClass[record.ClassUnavailable],
		q.ByClass[record.ClassServerError], q.ByClass[record.ClassClientError])
	p.f("  transport  cut off in flight %d%s · refused %d · timed out %d · other %d\n",
		q.CutOff, paren(counts(q.CutOffByTarget, nil)), q.Refused, q.Timeouts, q.ByClass[record.ClassTransport])
	p.f("\n")

	pay := r.Payments
	p.f("payments   %d: succeeded %d · failed %d · pending %d · dead-lettered %d\n", pay.Total, pay.Succeeded, pay.Failed, pay.Pending, pay.DeadLettered)
	p.f("psp        %d calls%s -> %d effective charges\n", r.PSP.Calls, paren(counts(r.PSP.ByOutcome, nil)), r.PSP.Charges)
	state := "complete"
	if !r.Drain.Complete {
		state = fmt.Sprintf("INCOMPLETE: %d pending, %d unpublished, %d queued, %d boundary stages pending past their lease",
			r.Drain.Pending, r.Drain.Unpublished, r.Drain.Queued, r.Drain.Stale)
	}
	p.f("drain      %s (limit %s): %s\n", r.Drain.Took.Round(100*time.Millisecond), r.Drain.Limit, state)
	var qs []string
	for _, x := range r.Queues {
		if x.Missing {
			qs = append(qs, x.Name+" missing")
			continue
		}
		qs = append(qs, fmt.Sprintf("%s %d", x.Name, x.Messages))
	}
	p.f("queues     %s\n", orNone(strings.Join(qs, " · ")))
	b := r.Boundary
	p.f("boundary   %d records: %d stages completed, %d pending with a live lease, %d pending past the lease\n",
		b.Records, b.Completed, b.PendingLive, b.PendingStale)
	p.f("\n")

	mid := 0
	for _, f := range r.Faults {
		if f.MidRequest != nil && *f.MidRequest {
			mid++
		}
	}
	p.f("faults (%d, %d landed mid-request)\n", len(r.Faults), mid)
	for _, f := range r.Faults {
		p.f("  %-9s %s\n", fmt.Sprintf("t+%.1fs", f.At.Seconds()), describe(f.Event))
	}
	if len(r.Matrix) > 0 {
		p.f("fault matrix (one row per fault; cut-offs, 503s, takeovers and violations in its window, up to the next fault)\n")
		writeMatrix(p, r.Matrix)
		p.f("  (* counted in the frozen replica; recovered in: after the fault ended, goodput back to %.0f%% of before, against the kind's bound)\n", RecoveryShare*100)
	}
	p.f("worker lease takeovers (%d)\n", len(r.Takeovers))
	for _, t := range r.Takeovers {
		p.f("  %-9s %s attempt %d by %s\n", fmt.Sprintf("t+%.1fs", t.TakenAt.Sub(r.Start).Seconds()), t.PaymentID, t.Attempt, t.Worker)
	}
	if len(r.DeadLetter) > 0 {
		p.f("dead-lettered messages of this run (%d)\n", len(r.DeadLetter))
		for _, d := range r.DeadLetter {
			p.f("  %s %s\n", d.MessageID, d.Reason)
		}
	}
	if r.EarlierDeadLetters > 0 {
		p.f("dead-lettered messages of no payment of this run (earlier runs): %d, not judged\n", r.EarlierDeadLetters)
	}
	p.f("\n")

	byInv := map[int]int{}
	for _, v := range r.Violations {
		byInv[v.Invariant]++
	}
	if k := r.K6; k != nil {
		switch failed := k.Failed(); {
		case len(failed) > 0:
			p.f("k6         exit %d, thresholds FAILED: %s\n\n", k.Exit, strings.Join(failed, "; "))
		case k.Exit != 0:
			p.f("k6         exit %d\n\n", k.Exit)
		default:
			p.f("k6         exit 0, %d thresholds held\n\n", len(k.Thresholds))
		}
	}
	p.f("invariants\n")
	for i := 1; i < len(invariants); i++ {
		status := "ok"
		if n := byInv[i]; n > 0 {
			status = fmt.Sprintf("VIOLATED (%d)", n)
		}
		note := ""
		if i == 6 {
			frozen := 0
			for _, f := range r.Faults {
				if f.Frozen && f.MidRequest != nil && *f.MidRequest {
					frozen++
				}
			}
			note = fmt.Sprintf(" [%d cut off, %d takeovers, %d faults seen frozen mid-work]", q.CutOff, len(r.Takeovers), frozen)
		}
		if i == 7 {
			note = " " + r.History.summary()
		}
		if i == 8 {
			note = " " + r.Liveness.Summary()
		}
		p.f("  %d %-70s %s%s\n", i, invariants[i], status, note)
	}
	r.History.write(p)
	if len(r.Violations) > 0 {
		p.f("\nviolations (%d)\n", len(r.Violations))
		for _, v := range r.Violations {
			p.f("  [%d %s] %s\n", v.Invariant, v.Kind, v.Detail)
			if len(v.IDs) > 0 {
				p.f("      ids: %s\n", strings.Join(v.IDs, " "))
			}
		}
	}
	if r.Repro != "" {
		p.f("\nrerun this load and fault plan: %s\n", r.Repro)
	}
	return p.err
}

// describe is one fault on one line.
func describe(e fault.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-7s %-9s", e.Action, e.Target)
	if e.PID != 0 {
		fmt.Fprintf(&b, " pid %d", e.PID)
	}
	if e.ForMS > 0 {
		fmt.Fprintf(&b, " for %s", time.Duration(e.ForMS)*time.Millisecond)
	}
	switch {
	case e.MidRequest != nil && *e.MidRequest:
		how := "seen"
		if e.Frozen {
			how = "seen frozen"
		}
		on := ""
		if e.Hit != "" {
			on = " on " + e.Hit
		}
		fmt.Fprintf(&b, ", mid-request (%d in flight%s, %s after %dms)", e.InFlight, on, how, e.WaitedMS)
	case e.MidRequest != nil:
		fmt.Fprintf(&b, ", NOT seen mid-request (waited %dms)", e.WaitedMS)
	}
	if e.Action != fault.ActionKill || !isReplica(e.Target) {
		fmt.Fprintf(&b, ", took %.1fs", float64(e.TookMS)/1000)
	}
	if c := e.Cost; c != nil && c.Node != "" {
		fmt.Fprintf(&b, "; hit %s", c.Node)
		if c.RefusedMS >= 0 {
			fmt.Fprintf(&b, ", writes refused %.1fs", float64(c.RefusedMS)/1000)
		}
		// Postgres: -1 is none seen (the field is left out for other kinds)
		switch {
		case c.PromotedMS > 0:
			fmt.Fprintf(&b, ", new primary in %.1fs", float64(c.PromotedMS)/1000)
		case c.PromotedMS < 0:
			b.WriteString(", NO new primary")
		}
		switch {
		case c.DemotedMS > 0:
			fmt.Fprintf(&b, ", old leader demoted in %.1fs", float64(c.DemotedMS)/1000)
		case c.DemotedMS < 0:
			b.WriteString(", old leader NOT demoted")
		}
		if c.Detail != "" {
			fmt.Fprintf(&b, ", %s", c.Detail)
		}
	}
	if e.Error != "" {
		fmt.Fprintf(&b, " FAILED: %s", e.Error)
	}
	return b.String()
}

// writeMatrix writes the fault matrix's table. The kind, target and hit
// columns are as wide as their longest cell, and at least 20, 17 and 17.
func writeMatrix(p *printer, rows []FaultRow) {
	kindW, targetW, hitW := 20, 17, 17
	for _, row := range rows {
		kindW, targetW, hitW = max(kindW, len(row.Kind)), max(targetW, len(row.Target)), max(hitW, len(orNone(row.Hit)))
	}
	p.f("  %-3s %-*s %-*s %-8s %-7s %-*s %-8s %-9s %-6s %-10s %-12s %-9s %s\n",
		"#", kindW, "kind", targetW, "target", "at", "landed", hitW, "hit", "inflight", "cut off", "503s", "takeovers", "exercises", "violated", "recovered in")
	for _, row := range rows {
		landed := "yes"
		if !row.Landed {
			landed = "NO"
		}
		inflight := fmt.Sprint(row.InFlight)
		if row.Frozen {
			inflight += "*"
		}
		p.f("  %-3d %-*s %-*s %-8s %-7s %-*s %-8s %-9d %-6d %-10d %-12s %-9s %s\n", row.Seq, kindW, row.Kind, targetW, row.Target,
			fmt.Sprintf("t+%.0fs", row.At.Seconds()), landed, hitW, orNone(row.Hit), inflight, row.CutOff, row.Unavailable, row.Takeovers,
			ints(row.Exercises), orNone(ints(row.Violated)), row.Recovery.Cell())
	}
}

// counts formats a count map as "a 1 · b 2", in the given order first, then
// the remaining keys by name; zero counts are left out.
func counts[K ~string](m map[K]int, order []K) string {
	var parts []string
	seen := map[K]bool{}
	for _, k := range order {
		seen[k] = true
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", strings.ReplaceAll(string(k), "_", " "), m[k]))
		}
	}
	rest := slices.SortedFunc(maps.Keys(m), func(a, b K) int { return cmp.Compare(a, b) })
	for _, k := range rest {
		if !seen[k] && m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", strings.ReplaceAll(string(k), "_", " "), m[k]))
		}
	}
	return strings.Join(parts, " · ")
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// ints formats invariant numbers as "1,2,5".
func ints(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}

func isReplica(target string) bool {
	return strings.HasPrefix(target, "api-") || strings.HasPrefix(target, "worker-")
}
