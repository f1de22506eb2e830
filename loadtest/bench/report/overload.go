package report

import (
	"fmt"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/oncepay/oncepay/loadtest/bench/results"
)

// overload writes the overload phase's table: each copy's capacity run,
// then each step with its verdict against that copy's capacity.
func overload(w io.Writer, r *results.Results) {
	o := r.Overload
	if o == nil {
		return
	}
	fmt.Fprintf(w, "\n## Overload: new (%s) against base (%s = %s)\n\n", r.Commit, o.BaseRef, o.BaseCommit)
	fmt.Fprintf(w, "Goals per step, against the copy's own capacity: goodput >= %.1fx, refusals (503/429) with Retry-After "+
		"and p99 < %d ms, nothing timed out, k6 sent >= 99 %% of the offered load, api's and workers' RSS <= %.1fx. "+
		"Steps of %d s; rates per second.\n\n", results.OverloadGoodputFloor, results.OverloadRefusalP99MS, results.OverloadRSSGrowth, o.Seconds)
	if o.LoadCPUs != "" {
		fmt.Fprintf(w, "k6 and the psp ran on CPUs %s only (BENCH_LOAD_CPUS), the system under test on the others.\n\n", o.LoadCPUs)
	}
	fmt.Fprint(w, "| copy | load | offered | sent | accepted | goodput | refused | refusal p99 ms | timed out | other failed | answer p99 ms | api MiB | workers MiB | drained s | verdict |\n")
	fmt.Fprint(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	row := func(p results.OverloadPoint, load, verdict string) {
		fmt.Fprintf(w, "| %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %s |\n",
			p.Copy, load, map[bool]string{true: "closed", false: fmt.Sprintf("%.0f", p.Offered)}[p.Offered == 0], p.Sent, p.Accepted, p.Goodput,
			p.Refused, p.RefusedP99, p.TimedOut, p.OtherFailed, p.AcceptedP99, p.APIRSS, p.WorkerRSS, p.DrainedIn, verdict)
	}
	for _, c := range o.Capacity {
		row(c, "capacity", "")
	}
	for _, s := range o.Steps {
		c, _ := o.CapacityOf(s.Copy)
		row(s, fmt.Sprintf("%gx", s.Factor), verdictText(results.Judge(c, s)))
	}
}

// verdictText is a step's verdict in a few words.
func verdictText(v results.Verdict) string {
	if v.OK() {
		return fmt.Sprintf("**met** (%.2fx goodput)", v.GoodputRatio)
	}
	var why []string
	if !v.GoodputOK {
		why = append(why, fmt.Sprintf("goodput %.2fx", v.GoodputRatio))
	}
	if !v.RefusalOK {
		why = append(why, "excess not refused fast")
	}
	if !v.MemoryOK {
		why = append(why, fmt.Sprintf("RSS api %.2fx, workers %.2fx", v.APIGrowth, v.WorkerGrowth))
	}
	s := "**not met**:"
	for i, y := range why {
		s += map[bool]string{true: " ", false: "; "}[i == 0] + y
	}
	return s
}

// overloadPlot draws goodput against offered load, one line per copy from
// its capacity run (at its own rate) through its steps, with the ideal
// (goodput = offered) and the goal (0.9 × capacity) for reference.
func overloadPlot(o *results.Overload, path string) error {
	p := plot.New()
	p.Title.Text = "Overload: goodput (accepted and charged) against offered load"
	p.X.Label.Text, p.Y.Label.Text = "offered payments/s (capacity: closed model)", "goodput payments/s"
	p.Legend.Top, p.Legend.Left = true, true
	top := 1.0
	var lines []any
	for _, name := range []string{"new", "base"} {
		c, ok := o.CapacityOf(name)
		if !ok {
			continue
		}
		pts := plotter.XYs{{X: c.Accepted, Y: c.Goodput}}
		for _, s := range o.Steps {
			if s.Copy == name {
				pts = append(pts, plotter.XY{X: s.Offered, Y: s.Goodput})
				top = max(top, s.Offered)
			}
		}
		top = max(top, c.Accepted)
		lines = append(lines, fmt.Sprintf("%s (capacity %.0f/s)", name, c.Goodput), pts)
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return err
	}
	ideal, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: top, Y: top}})
	if err != nil {
		return err
	}
	ideal.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	p.Add(ideal)
	p.Legend.Add("goodput = offered", ideal)
	p.X.Min, p.Y.Min, p.X.Max, p.Y.Max = 0, 0, top*1.05, top*1.05
	return saveTiles(path, 8*vg.Inch, 5*vg.Inch, p)
}
