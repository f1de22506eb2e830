// Package report renders a benchmark run (results.Results) as markdown
// tables and PNG plots, for the run directory and for docs/PERFORMANCE.md.
package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/oncepay/oncepay/loadtest/bench/cpu"
	"github.com/oncepay/oncepay/loadtest/bench/peer"
	"github.com/oncepay/oncepay/loadtest/bench/results"
)

// Write renders report.md and the perf-*.png plots into dir and prints the
// targets table to w.
func Write(r *results.Results, dir string, w io.Writer) error {
	var md strings.Builder
	Markdown(&md, r)
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	if err := Plots(r, dir); err != nil {
		return err
	}
	fmt.Fprintln(w)
	targets(w, r)
	fmt.Fprintf(w, "\nreport: %s\n", filepath.Join(dir, "report.md"))
	return nil
}

// Markdown writes every table of the run.
func Markdown(w io.Writer, r *results.Results) {
	fmt.Fprintf(w, "# oncepay benchmark run %s\n\n", r.Started.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "Took %s; quick mode: %v; commit %s.\n\n", r.Elapsed.Round(1e9), r.Quick, r.Commit)
	fmt.Fprint(w, "## Targets\n\n")
	targets(w, r)
	latencyBreakdown(w, r)
	costs(w, r)
	machine(w, r)
	goBench(w, r)
	e2e(w, r)
	overload(w, r)
	if r.Peer != nil {
		fmt.Fprintf(w, "\n## Against a peer (make bench-peer)\n\n%s", peer.Table(r.Peer))
	}
	if len(r.Notes) > 0 {
		fmt.Fprint(w, "\n## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
}

func targets(w io.Writer, r *results.Results) {
	fmt.Fprint(w, "| target | goal | measured | |\n|---|---|---|---|\n")
	for _, t := range r.Targets() {
		fmt.Fprintf(w, "| %s | %s | %s | **%s** |\n", t.Name, t.Goal, cmp.Or(t.Measured, "–"), t.Status())
	}
}

// latencyBreakdown shows, per latency round, where target 1's time goes:
// the api's Begin and Complete against the floor's, and the server-side
// request time with and without the boundary; when target 1 is not met,
// one line more for the median round says where the overhead goes.
func latencyBreakdown(w io.Writer, r *results.Results) {
	if r.E2E == nil {
		return
	}
	var rows []results.LatRound
	for _, l := range r.E2E.Latency {
		if l.Breakdown.Known() {
			rows = append(rows, l)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprint(w, "\n### Where target 1's time goes\n\nPer latency round, from the api replicas' histograms over the round's slices (p50 interpolated in the buckets; mean in brackets), in ms; the floor's calls timed by bench, back to back (the target's floor) and paced at one api replica's rate (its requests' gap) after the round:\n\n")
	fmt.Fprint(w, "| round | overhead (client) | server on | server off | server on - off | api Begin | api Complete | floor Begin | floor Complete | paced Begin | paced Complete |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	t := func(x results.Timing) string { return fmt.Sprintf("%.3f (%.3f)", x.P50MS, x.MeanMS) }
	for i, l := range rows {
		b := l.Breakdown
		fmt.Fprintf(w, "| %d | %+.3f | %s | %s | %+.3f | %s | %s | %s | %s | %s | %s |\n", i+1, results.Median(l.Overheads()), t(b.ServerOn), t(b.ServerOff),
			b.ServerOn.P50MS-b.ServerOff.P50MS, t(b.Begin), t(b.Complete), t(b.FloorBegin), t(b.FloorComplete), t(b.PacedBegin), t(b.PacedComplete))
	}
	if slices.ContainsFunc(r.Targets(), func(t results.Target) bool { return strings.HasPrefix(t.Name, "1.") && t.Known && !t.Met }) {
		slices.SortFunc(rows, func(a, b results.LatRound) int {
			return cmp.Compare(results.Median(a.Overheads()), results.Median(b.Overheads()))
		})
		m := rows[len(rows)/2]
		fmt.Fprintf(w, "\nWhere the overhead goes (the median round): %s.\n", m.Breakdown.Where(results.Median(m.Overheads())))
	}
}

// costs explains target 4b when it is not met: each copy's CPU per charged
// payment by process group, and its Postgres commits per payment, in the
// run the target reports.
func costs(w io.Writer, r *results.Results) {
	if !slices.ContainsFunc(r.Targets(), func(t results.Target) bool {
		return strings.HasPrefix(t.Name, "4b.") && t.Known && !t.Met
	}) {
		return
	}
	fmt.Fprint(w, "\n### Where 4b's CPU goes\n\nCPU per charged payment (ms) by process group, in the sustained run that 4b reports:\n\n")
	fmt.Fprint(w, "| copy | offered /s | run | total ms | Postgres commits per payment | by group, ms |\n|---|---:|---|---:|---:|---|\n")
	for _, c := range r.Costs() {
		groups := make([]string, len(c.Groups))
		for i, g := range c.Groups {
			groups[i] = fmt.Sprintf("%s %.2f", g.Name, g.MS)
		}
		fmt.Fprintf(w, "| %s | %.0f | %s | %.2f | %.2f | %s |\n", c.Copy, c.Rate, c.Which, c.MS, c.PGCommits, strings.Join(groups, ", "))
	}
}

func machine(w io.Writer, r *results.Results) {
	m := r.Machine
	fmt.Fprint(w, "\n## Machine\n\n")
	fmt.Fprintf(w, "- %d cores, %s, %.0f GiB, Linux %s, %s\n", m.Cores, m.CPU, m.MemoryGiB, m.Kernel, m.Go)
	fmt.Fprintf(w, "- %s\n", strings.Join(m.Versions, "; "))
	fmt.Fprintf(w, "- load average before the run (other people's work): %.2f / %.2f / %.2f (1 / 5 / 15 min)\n", m.LoadBefore[0], m.LoadBefore[1], m.LoadBefore[2])
	s := r.Settings
	fmt.Fprintf(w, "- settings: go -count %d -benchtime %s; e2e phases %ds; sustained runs %ds; %d repeats; %d k6 clients at saturation; latency rounds at %d/s; worker concurrency %d; psp latency %s\n",
		s.GoCount, s.GoBenchtime, s.PhaseSeconds, s.SustainSeconds, s.Repeats, s.SaturationVUs, s.LatencyRate, s.WorkerConcurrency, s.PSPLatency)
}

func goBench(w io.Writer, r *results.Results) {
	g := r.Go
	if g == nil {
		return
	}
	fmt.Fprintf(w, "\n## pkg/idem Go benchmarks (median of %d runs)\n\n", g.Runs)
	fmt.Fprint(w, "| benchmark | µs/op | ops/s | B/op | allocs/op | min–max µs/op |\n|---|---:|---:|---:|---:|---|\n")
	for _, name := range []string{"BeginComplete", "BeginReplay", "RawEvalSha", "Keep"} {
		if len(g.Samples[name]) == 0 {
			continue
		}
		m, ns := g.Median(name), []float64{}
		for _, p := range g.Samples[name] {
			ns = append(ns, p.NsPerOp)
		}
		fmt.Fprintf(w, "| %s | %.1f | %.0f | %.0f | %.0f | %.1f–%.1f |\n", name, m.NsPerOp/1e3, 1e9/m.NsPerOp, m.BytesPerOp, m.AllocsPerOp,
			slices.Min(ns)/1e3, slices.Max(ns)/1e3)
	}
	if g.Benchstat != "" {
		fmt.Fprintf(w, "\nbenchstat:\n\n```text\n%s\n```\n", strings.TrimSpace(g.Benchstat))
	}
}

var e2eGroups = []string{"api", "worker", "psp", "postgres", "rabbitmq", "redis", "k6"}

func e2e(w io.Writer, r *results.Results) {
	e := r.E2E
	if e == nil {
		return
	}
	fmt.Fprintln(w, "\n## End to end")
	if e.VacuumSeconds > 0 {
		fmt.Fprintf(w, "\nVACUUM (ANALYZE) of the end-to-end tables ran before every side-by-side phase (not the sustained runs), %.0f s in all, outside the measurements (autovacuum stays on).\n", e.VacuumSeconds)
	}
	if e.RewriteSeconds > 0 {
		fmt.Fprintf(w, "\nRedis's AOF was rewritten (BGREWRITEAOF, waited for) before every side-by-side phase (not the sustained runs), %.0f s in all, outside the measurements: the bench's young data set would otherwise rewrite itself in the boundary's phases.\n", e.RewriteSeconds)
	}
	off := "boundary off"
	if r.Settings.Postgres == "patroni" {
		off = "boundary on, Postgres under Patroni (synchronous)"
		fmt.Fprint(w, "\nBENCH_PG=patroni: the second copy ran with the boundary on against Postgres under Patroni, synchronous replication, three nodes on this machine, in place of the copy without the boundary; every \"off\" below, and in the targets, is that copy.\n")
	}
	rt := e.RoundTrips
	fmt.Fprint(w, "\n### Redis round trips (INFO commandstats after CONFIG RESETSTAT)\n\n| phase | requests | round trips | per request | per request, without handshakes | by command | inside the scripts (not round trips) |\n|---|---:|---:|---:|---:|---|---|\n")
	for _, c := range []struct {
		name string
		c    results.Commands
	}{{"new payment, boundary on", rt.Fresh}, {"replay, boundary on", rt.Replay}, {"new payment, " + off, rt.Off}, {"worker, per payment charged", rt.Charge}} {
		fmt.Fprintf(w, "| %s | %d | %d | %.3f | %.3f | %s | %s |\n", c.name, c.c.Requests, c.c.Total, c.c.PerRequest(),
			c.c.PerRequestWork(), byCommand(c.c.ByCommand), byCommand(c.c.InScripts))
	}

	if len(e.Saturation) > 0 {
		fmt.Fprint(w, "\n### Saturation, side by side (k6 closed model)\n\n")
		phaseHeader(w)
		for i, s := range e.Saturation {
			phaseRow(w, i+1, "boundary on, new payments", s.On)
			phaseRow(w, i+1, off+", new payments", s.Off)
			phaseRow(w, i+1, "boundary on, replays", s.Replay)
		}
	}
	if len(e.Latency) > 0 {
		fmt.Fprintf(w, "\n### Latency at %d requests/s, side by side (k6 open model)\n\n", r.Settings.LatencyRate)
		phaseHeader(w)
		for i, l := range e.Latency {
			phaseRow(w, i+1, "boundary on", l.On)
			phaseRow(w, i+1, off, l.Off)
		}
		fmt.Fprint(w, "\nEach round's rows are its median slices. pkg/idem's own Begin+Complete on the same Redis, one call at a time, measured right after each round's slices; the api's overhead is the median of the round's paired slice differences (on - off):\n\n| round | calls | p50 ms | p99 ms | api p50 overhead ms | paired differences ms |\n|---|---:|---:|---:|---:|---|\n")
		for i, l := range e.Latency {
			d := l.Overheads()
			cells := make([]string, len(d))
			for j, v := range d {
				cells[j] = fmt.Sprintf("%+.2f", v)
			}
			fmt.Fprintf(w, "| %d | %d | %.3f | %.3f | %+.3f | %s |\n", i+1, l.Floor.Ops, l.Floor.P50MS, l.Floor.P99MS, results.Median(d), strings.Join(cells, " "))
		}
	}
	secs := float64(r.Settings.SustainSeconds)
	sustainedTables(w, "Sustained end to end, boundary on (k6 open model)", e.Sustained, secs)
	sustainedTables(w, "Sustained end to end, "+off, e.SustainedOff, secs)
}

// sustainedTables writes the table of sustained runs ss of secs seconds and
// their CPU, if any.
func sustainedTables(w io.Writer, title string, ss []results.Sustained, secs float64) {
	if len(ss) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### %s\n\n", title)
	fmt.Fprint(w, "| offered /s | accepted /s | charged /s | p50 ms | p99 ms | pending start → max → end | backlog slope /s | drained in s | Postgres commits per payment | Redis bytes per payment | Redis AOF rewrites | autovacuumed | held | why not |\n|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---|---|\n")
	for _, s := range ss {
		held := map[bool]string{true: "yes", false: "**no**"}[s.OK]
		fmt.Fprintf(w, "| %.0f | %.1f | %.1f | %.1f | %.1f | %d → %d → %d | %.1f | %.1f | %.2f | %.0f | %d | %s | %s | %s |\n",
			s.Rate, s.Phase.Accepted, s.Phase.Charged, s.Phase.P50MS, s.Phase.P99MS, s.PendingStart, int(slices.Max(append(s.Pending, 0))), s.PendingEnd,
			s.BacklogSlope, s.Phase.DrainedIn, s.PGCommits, s.RedisBytesPerPayment, s.Phase.AOFRewrites, strings.Join(s.Autovacuumed, ", "), held, s.Why)
	}
	fmt.Fprint(w, "\nCPU (cores) during these runs:\n\n")
	cpuHeader(w, "| offered /s | CPU ms per charged payment | the same without the psp | machine busy | others | psp's database |",
		"|---:|---:|---:|---:|---:|---:|")
	for _, s := range ss {
		fmt.Fprintf(w, "| %.0f | %.2f | %.2f | %.2f | %.2f | %.2f |", s.Rate, s.CPUPerCharged(secs, false), s.CPUPerCharged(secs, true),
			s.Phase.CPU.MachineBusy, s.Phase.CPU.Others, s.PSPDB)
		cpuCells(w, s.Phase.CPU)
		fmt.Fprintln(w)
	}
}

func phaseHeader(w io.Writer) {
	cpuHeader(w, "| round | phase | accepted /s | replayed /s | charged /s | p50 ms | p99 ms | failed | drained in s | machine busy |",
		"|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
}

// cpuHeader writes a table header: head and align (the leading columns and
// their alignment row), then a column for each CPU group of e2eGroups.
func cpuHeader(w io.Writer, head, align string) {
	fmt.Fprintf(w, "%s %s |\n%s%s\n", head, strings.Join(e2eGroups, " | "), align, strings.Repeat("---:|", len(e2eGroups)))
}

func phaseRow(w io.Writer, round int, name string, p results.Phase) {
	fmt.Fprintf(w, "| %d | %s | %.0f | %.0f | %.0f | %.2f | %.2f | %d | %.1f | %.2f |", round, name, p.Accepted, p.Replayed, p.Charged,
		p.P50MS, p.P99MS, p.Failed, p.DrainedIn, p.CPU.MachineBusy)
	cpuCells(w, p.CPU)
	fmt.Fprintln(w)
}

func cpuCells(w io.Writer, u cpu.Usage) {
	for _, g := range e2eGroups {
		fmt.Fprintf(w, " %.2f |", u.Cores[g])
	}
}

func byCommand(m map[string]int) string {
	var s []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s = append(s, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
