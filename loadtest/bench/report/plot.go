package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/oncepay/oncepay/loadtest/bench/results"
)

// Plots writes perf-e2e.png, perf-sustained.png and perf-overload.png into
// dir, each when the run has the data.
func Plots(r *results.Results, dir string) error {
	if r.Overload != nil && len(r.Overload.Capacity) > 0 {
		if err := overloadPlot(r.Overload, filepath.Join(dir, "perf-overload.png")); err != nil {
			return err
		}
	}
	if r.E2E == nil {
		return nil
	}
	if len(r.E2E.Saturation) > 0 {
		if err := e2ePlot(r, filepath.Join(dir, "perf-e2e.png")); err != nil {
			return err
		}
	}
	if len(r.E2E.Sustained) == 0 {
		return nil
	}
	return sustainedPlot(r.E2E.Sustained, r.E2E.SustainedOff, filepath.Join(dir, "perf-sustained.png"))
}

func saveTiles(path string, w, h vg.Length, plots ...*plot.Plot) error {
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Points(20), PadTop: vg.Points(8), PadBottom: vg.Points(8), PadLeft: vg.Points(8), PadRight: vg.Points(8)}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	var png bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&png); err != nil {
		return err
	}
	return os.WriteFile(path, png.Bytes(), 0o644)
}

// bar is one bar of a chart, with the label above it (its value when
// empty).
type bar struct {
	name  string
	v     float64
	label string
}

// e2ePlot draws, side by side, the throughputs (sustained, saturation,
// replays) and the p50 latencies at the latency rounds' rate next to
// pkg/idem's floor, medians over the rounds.
func e2ePlot(r *results.Results, path string) error {
	e := r.E2E
	var on, off, replay, chOn, chOff []float64
	for _, s := range e.Saturation {
		on, off, replay = append(on, s.On.Accepted), append(off, s.Off.Accepted), append(replay, s.Replay.Replayed)
		chOn, chOff = append(chOn, s.On.Charged), append(chOff, s.Off.Charged)
	}
	rates, err := barChart(fmt.Sprintf("End to end on %d cores: per second, medians", r.Machine.Cores), "per second", "%.0f", []bar{
		{"sustained\nboundary on", results.BestHeld(e.Sustained).Rate, noneHeld(e.Sustained)},
		{"sustained\nboundary off", results.BestHeld(e.SustainedOff).Rate, noneHeld(e.SustainedOff)},
		{"accepted\nboundary on", results.Median(on), ""}, {"accepted\nboundary off", results.Median(off), ""},
		{"charged\nboundary on", results.Median(chOn), ""}, {"charged\nboundary off", results.Median(chOff), ""},
		{"replays\nboundary on", results.Median(replay), ""},
	})
	if err != nil {
		return err
	}
	var lon, loff, over, fl []float64
	for _, l := range e.Latency {
		lon, loff, fl = append(lon, l.On.P50MS), append(loff, l.Off.P50MS), append(fl, l.Floor.P50MS)
		over = append(over, l.Overheads()...)
	}
	lat, err := barChart(fmt.Sprintf("p50 at %d requests/s, medians", r.Settings.LatencyRate), "ms", "%.2f", []bar{
		{"api\nboundary on", results.Median(lon), ""}, {"api\nboundary off", results.Median(loff), ""},
		{"overhead\n(paired on - off)", results.Median(over), ""},
		{"pkg/idem\nBegin+Complete", results.Median(fl), ""},
	})
	if err != nil {
		return err
	}
	return saveTiles(path, 13*vg.Inch, 5*vg.Inch, rates, lat)
}

// barChart is a chart of bars, each labelled with its value in format or
// its own label.
func barChart(title, unit, format string, bars []bar) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text, p.Y.Label.Text = title, unit
	var vals plotter.Values
	var names, texts []string
	var at plotter.XYs
	for i, b := range bars {
		vals, names, at = append(vals, b.v), append(names, b.name), append(at, plotter.XY{X: float64(i) - 0.15, Y: b.v})
		if b.label == "" {
			b.label = fmt.Sprintf(format, b.v)
		}
		texts = append(texts, b.label)
	}
	bc, err := plotter.NewBarChart(vals, vg.Points(38))
	if err != nil {
		return nil, err
	}
	bc.Color = plotutil.Color(0)
	bc.LineStyle.Width = 0
	p.Add(bc)
	labels, err := plotter.NewLabels(plotter.XYLabels{XYs: at, Labels: texts})
	if err != nil {
		return nil, err
	}
	p.Add(labels)
	p.NominalX(names...)
	p.Y.Min, p.Y.Max = 0, max(slices.Max([]float64(vals))*1.12, 1e-3)
	return p, nil
}

// noneHeld labels the bar of sustained runs ss when none of them held (a
// bar of 0 would read as a measured rate of 0): which rates were tried.
// Empty when one held or none ran.
func noneHeld(ss []results.Sustained) string {
	if len(ss) == 0 || results.BestHeld(ss).Rate > 0 {
		return ""
	}
	lo, hi := ss[0].Rate, ss[0].Rate
	for _, s := range ss {
		lo, hi = min(lo, s.Rate), max(hi, s.Rate)
	}
	if lo == hi {
		return fmt.Sprintf("none held\n(%.0f tried)", lo)
	}
	return fmt.Sprintf("none held\n(%.0f-%.0f tried)", lo, hi)
}

// sustainedPlot draws the payments pending during every sustained run,
// one line per run, the two copies side by side on the same scale.
func sustainedPlot(on, off []results.Sustained, path string) error {
	var tiles []*plot.Plot
	top := 1.0
	for _, c := range []struct {
		title string
		runs  []results.Sustained
	}{{"boundary on", on}, {"boundary off", off}} {
		p := plot.New()
		p.Title.Text = "Sustained, " + c.title + ": payments pending (accepted, not yet charged)"
		p.X.Label.Text, p.Y.Label.Text = "seconds into the run", "pending payments"
		p.Legend.Top, p.Legend.Left = true, true
		var lines []any
		for _, s := range c.runs {
			var pts plotter.XYs
			for j, y := range s.Pending {
				pts = append(pts, plotter.XY{X: float64(j + 1), Y: y})
				top = max(top, y)
			}
			if len(pts) > 0 {
				held := map[bool]string{true: "held", false: "did not hold"}[s.OK]
				lines = append(lines, fmt.Sprintf("%.0f payments/s offered (%s)", s.Rate, held), pts)
			}
		}
		if err := plotutil.AddLinePoints(p, lines...); err != nil {
			return err
		}
		tiles = append(tiles, p)
	}
	for _, p := range tiles {
		p.Y.Min, p.Y.Max = 0, top*1.1
	}
	return saveTiles(path, 16*vg.Inch, 5*vg.Inch, tiles...)
}
