// Package report renders a benchmark run (results.Results) as markdown
// tables and PNG plots, for the run directory and for docs/PERFORMANCE.md.
package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/oncepay/oncepay/loadtest/bench/cpu"
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
	fmt.Fprintln(w, "## Targets")
	fmt.Fprintln(w)
	targets(w, r)
	machine(w, r)
	goBench(w, r)
	ceilings(w, r)
	colocated(w, r)
	e2e(w, r)
	if len(r.Notes) > 0 {
		fmt.Fprintln(w, "\n## Notes")
		fmt.Fprintln(w)
		for _, n := range r.Notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
}

func targets(w io.Writer, r *results.Results) {
	fmt.Fprintln(w, "| target | goal | measured | met |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, t := range r.Targets() {
		met := "not measured"
		switch {
		case t.Known && t.Met:
			met = "**met**"
		case t.Known:
			met = "**not met**"
		}
		m := t.Measured
		if m == "" {
			m = "–"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", t.Name, t.Goal, m, met)
	}
}

func machine(w io.Writer, r *results.Results) {
	m := r.Machine
	fmt.Fprintln(w, "\n## Machine")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "- %d cores, %s, %.0f GiB, Linux %s, %s\n", m.Cores, m.CPU, m.MemoryGiB, m.Kernel, m.Go)
	fmt.Fprintf(w, "- %s\n", strings.Join(m.Versions, "; "))
	fmt.Fprintf(w, "- load average before the run (other people's work): %.2f / %.2f / %.2f (1 / 5 / 15 min)\n", m.LoadBefore[0], m.LoadBefore[1], m.LoadBefore[2])
	if len(r.Load) > 0 {
		var ones []float64
		for _, l := range r.Load {
			ones = append(ones, l.Load[0])
		}
		fmt.Fprintf(w, "- 1-minute load average at the start of the %d phases: min %.2f, median %.2f, max %.2f\n",
			len(ones), slices.Min(ones), results.Median(ones), slices.Max(ones))
	}
	s := r.Settings
	fmt.Fprintf(w, "- settings: go -count %d -benchtime %s; colocated steps %ds; e2e phases %ds; sustained runs %ds; %d repeats; %d k6 clients at saturation; latency rounds at %d/s; worker concurrency %d; psp latency %s\n",
		s.GoCount, s.GoBenchtime, s.StepSeconds, s.PhaseSeconds, s.SustainSeconds, s.Repeats, s.SaturationVUs, s.LatencyRate, s.WorkerConcurrency, s.PSPLatency)
}

func goBench(w io.Writer, r *results.Results) {
	g := r.Go
	if g == nil {
		return
	}
	fmt.Fprintf(w, "\n## pkg/idem Go benchmarks (median of %d runs)\n\n", g.Runs)
	fmt.Fprintln(w, "| benchmark | µs/op | ops/s | B/op | allocs/op | min–max µs/op |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---|")
	for _, name := range []string{"BeginComplete", "BeginReplay", "RawEvalSha", "Keep"} {
		m, ok := g.Medians[name]
		if !ok {
			continue
		}
		var ns []float64
		for _, p := range g.Samples[name] {
			ns = append(ns, p.NsPerOp)
		}
		fmt.Fprintf(w, "| %s | %.1f | %.0f | %.0f | %.0f | %.1f–%.1f |\n", name, m.NsPerOp/1e3, m.OpsPerSec, m.BytesPerOp, m.AllocsPerOp,
			slices.Min(ns)/1e3, slices.Max(ns)/1e3)
	}
	if g.Benchstat != "" {
		fmt.Fprintf(w, "\nbenchstat:\n\n```text\n%s\n```\n", strings.TrimSpace(g.Benchstat))
	}
}

func ceilings(w io.Writer, r *results.Results) {
	c := r.Ceilings
	if c == nil {
		return
	}
	fmt.Fprintf(w, "\n## Stand-alone ceilings (median of %d runs)\n\n", len(c.PGInsert))
	fmt.Fprintln(w, "| what | tool | median | runs |")
	fmt.Fprintln(w, "|---|---|---:|---|")
	row := func(what, tool string, xs []float64, unit string) {
		fmt.Fprintf(w, "| %s | %s | %.0f %s | %s |\n", what, tool, results.Median(xs), unit, list(xs))
	}
	row("EVALSHA begin.lua, fresh keys", fmt.Sprintf("redis-benchmark -c %d", c.RedisClients), c.RedisBegin, "req/s")
	row("EVALSHA complete.lua", fmt.Sprintf("redis-benchmark -c %d", c.RedisClients), c.RedisComplete, "req/s")
	fmt.Fprintf(w, "| Redis, one begin + one complete per payment | (from the two above) | %.0f payments/s | |\n", c.RedisPaymentsPerSec())
	row("the api's transaction: payment + outbox insert", fmt.Sprintf("pgbench -M prepared -c %d", c.PGClients), c.PGInsert, "tx/s")
	if len(c.PGInsert4RT) > 0 {
		row("the same as BEGIN, 2 INSERTs, COMMIT (the api before 87b740b)", fmt.Sprintf("pgbench -M prepared -c %d", c.PGClients), c.PGInsert4RT, "tx/s")
	}
	row("the worker's compare-and-set update", fmt.Sprintf("pgbench -M prepared -c %d", c.PGClients), c.PGUpdate, "tx/s")
}

func list(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, fmt.Sprintf("%.0f", x))
	}
	return strings.Join(s, ", ")
}

// cpuGroups are the process groups of the CPU columns, in order.
var colocGroups = []string{"postgres", "rabbitmq", "redis", "http", "k6", "pgbench-insert", "pgbench-update", "stage-redis", "stage-amqp"}

func colocated(w io.Writer, r *results.Results) {
	c := r.Coloc
	if c == nil {
		return
	}
	fmt.Fprintf(w, "\n## Colocated ceiling: median %.0f payments/s, knee %.0f (%d searches)\n\n", c.Ceiling(), c.Knee(), len(c.Runs))
	fmt.Fprintln(w, "Every stage's bare work at X payments/s at once. ✓ kept up, ✗ fell behind. Achieved per second; CPU in cores.")
	fmt.Fprintln(w)
	fmt.Fprint(w, "| search | X | http (k6→JSON) | redis 2×EVALSHA | pg insert | pg update | amqp publish+consume | machine busy | others |")
	for _, g := range colocGroups {
		fmt.Fprintf(w, " %s |", g)
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, "|---|---:|---|---|---|---|---|---:|---:|")
	for range colocGroups {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w)
	for i, run := range c.Runs {
		for _, s := range run.Steps {
			fmt.Fprintf(w, "| %d | %.0f |", i+1, s.Rate)
			for _, name := range []string{"http", "redis", "pg_insert", "pg_update", "amqp"} {
				st := s.Stages[name]
				mark := "✗"
				if st.KeptUp {
					mark = "✓"
				}
				extra := ""
				if st.LagMS > 0 {
					extra = fmt.Sprintf(", lag %.0f ms", st.LagMS)
				}
				fmt.Fprintf(w, " %s %.0f%s |", mark, st.Achieved, extra)
			}
			fmt.Fprintf(w, " %.2f | %.2f |", s.CPU.MachineBusy, s.CPU.Others)
			for _, g := range colocGroups {
				fmt.Fprintf(w, " %.2f |", s.CPU.Cores[g])
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintln(w)
	for i, run := range c.Runs {
		fmt.Fprintf(w, "- search %d: ceiling %.0f, knee %.0f\n", i+1, run.Ceiling, run.Knee)
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
	if e.Baseline != "" {
		off = "baseline api"
		fmt.Fprintf(w, "\nA/B run: the \"baseline api\" rows ran %s with the boundary on.\n", e.Baseline)
	}
	rt := e.RoundTrips
	fmt.Fprintln(w, "\n### Redis round trips (INFO commandstats after CONFIG RESETSTAT)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| phase | requests | round trips | per request | per request, without handshakes | by command | inside the scripts (not round trips) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---|---|")
	for _, c := range []struct {
		name string
		c    results.Commands
	}{{"new payment, boundary on", rt.Fresh}, {"replay, boundary on", rt.Replay}, {"new payment, " + off, rt.Off}, {"worker, per payment charged", rt.Charge}} {
		fmt.Fprintf(w, "| %s | %d | %d | %.3f | %.3f | %s | %s |\n", c.name, c.c.Requests, c.c.Total, c.c.PerRequest(),
			c.c.PerRequestWork(), byCommand(c.c.ByCommand), byCommand(c.c.InScripts))
	}

	if len(e.Saturation) > 0 {
		fmt.Fprintln(w, "\n### Saturation, side by side (k6 closed model)")
		fmt.Fprintln(w)
		phaseHeader(w)
		for i, s := range e.Saturation {
			phaseRow(w, fmt.Sprintf("%d", i+1), "boundary on, new payments", s.On)
			phaseRow(w, fmt.Sprintf("%d", i+1), off+", new payments", s.Off)
			phaseRow(w, fmt.Sprintf("%d", i+1), "boundary on, replays", s.Replay)
		}
	}
	if len(e.Saturation) > 0 && e.Saturation[0].OnAlone != nil {
		fmt.Fprintln(w, "\n### One stage at a time, side by side")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "The api at saturation with its variant's workers stopped (k6 closed model), then those workers alone charging the backlog it left, no request arriving. CPU per payment: every oncepay process, server and k6, other people's work left out.")
		fmt.Fprintln(w)
		cpuHeader(w, "| round | stage | payments /s | p50 ms | backlog | seconds | CPU ms per payment | machine busy |",
			"|---|---|---:|---:|---:|---:|---:|---:|")
		for i, s := range e.Saturation {
			for _, a := range []struct {
				name string
				a    *results.Alone
			}{{"boundary on", s.OnAlone}, {off, s.OffAlone}} {
				if a.a == nil {
					continue
				}
				p, d := a.a.API, a.a.Drain
				fmt.Fprintf(w, "| %d | api alone, %s | %.0f | %.2f | | | %.2f | %.2f |", i+1, a.name, p.Accepted, p.P50MS, p.CPUPerRequest(), p.CPU.MachineBusy)
				cpuCells(w, p.CPU)
				fmt.Fprintf(w, "\n| %d | workers alone, %s | %.0f | | %d | %.1f | %.2f | %.2f |", i+1, a.name, d.Charged, d.Backlog, d.Seconds, d.CPUPerPayment(), d.CPU.MachineBusy)
				cpuCells(w, d.CPU)
				fmt.Fprintln(w)
			}
		}
	}
	if len(e.Latency) > 0 {
		fmt.Fprintf(w, "\n### Latency at %d requests/s, side by side (k6 open model)\n\n", r.Settings.LatencyRate)
		phaseHeader(w)
		for i, l := range e.Latency {
			phaseRow(w, fmt.Sprintf("%d", i+1), "boundary on", l.On)
			phaseRow(w, fmt.Sprintf("%d", i+1), off, l.Off)
		}
	}
	sustainedTables(w, "Sustained end to end (boundary on, k6 open model)", e.Sustained)
	sustainedTables(w, "Sustained end to end, boundary off (a reference: from the target rate, up while it holds, down while it fails)", e.SustainedOff)
}

// sustainedTables writes the table of sustained runs ss and their CPU, if any.
func sustainedTables(w io.Writer, title string, ss []results.Sustained) {
	if len(ss) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### %s\n\n", title)
	fmt.Fprintln(w, "| offered /s | accepted /s | charged /s | p50 ms | p99 ms | pending start → max → end | backlog slope /s | drained in s | Postgres commits per payment | Redis bytes per payment | Redis AOF rewrites (s) | vacuuming s (autovacuumed) | held | why not |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---|---|")
	for _, s := range ss {
		held := "yes"
		if !s.OK {
			held = "**no**"
		}
		fmt.Fprintf(w, "| %.0f | %.1f | %.1f | %.1f | %.1f | %d → %d → %d | %.1f | %.1f | %.2f | %s | %s | %s | %s | %s |\n",
			s.Rate, s.Phase.Accepted, s.Phase.Charged, s.Phase.P50MS, s.Phase.P99MS, s.PendingStart, s.PendingMax, s.PendingEnd,
			s.BacklogSlope, s.DrainedIn, s.PGCommits, redisBytes(s), rewrites(s), vacuums(s), held, s.Why)
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, "CPU (cores) during these runs:\n\n")
	cpuHeader(w, "| offered /s | machine busy | others |", "|---:|---:|---:|")
	for _, s := range ss {
		fmt.Fprintf(w, "| %.0f | %.2f | %.2f |", s.Rate, s.Phase.CPU.MachineBusy, s.Phase.CPU.Others)
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
	fmt.Fprint(w, head)
	for _, g := range e2eGroups {
		fmt.Fprintf(w, " %s |", g)
	}
	fmt.Fprint(w, "\n"+align)
	for range e2eGroups {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w)
}

func phaseRow(w io.Writer, round, name string, p results.Phase) {
	fmt.Fprintf(w, "| %s | %s | %.0f | %.0f | %.0f | %.2f | %.2f | %d | %.1f | %.2f |", round, name, p.Accepted, p.Replayed, p.Charged,
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
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var s []string
	for _, k := range keys {
		s = append(s, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// redisBytes is a sustained run's Redis memory per payment with the
// records' encoding ("–" in runs from before it was recorded).
func redisBytes(s results.Sustained) string {
	if s.RedisBytesPerPayment == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f (%s)", s.RedisBytesPerPayment, s.RecordEncoding)
}

// rewrites is a sustained run's AOF rewrites and the seconds sampled with
// one in progress ("–" in runs from before they were recorded).
func rewrites(s results.Sustained) string {
	if s.Rewriting == nil {
		return "–"
	}
	return fmt.Sprintf("%d (%.0f)", s.Phase.AOFRewrites, seconds(s.Rewriting, s.SampleEvery))
}

// vacuums is a sustained run's seconds sampled with a VACUUM running and
// the tables autovacuum finished ("–" in runs from before they were
// recorded).
func vacuums(s results.Sustained) string {
	if s.Vacuuming == nil {
		return "–"
	}
	out := fmt.Sprintf("%.0f", seconds(s.Vacuuming, s.SampleEvery))
	if len(s.Autovacuumed) > 0 {
		out += " (" + strings.Join(s.Autovacuumed, ", ") + ")"
	}
	return out
}

// seconds is how long flags, sampled every `every` seconds, were true.
func seconds(flags []bool, every float64) float64 {
	secs := 0.0
	for _, f := range flags {
		if f {
			secs += every
		}
	}
	return secs
}
