package report

import (
	"fmt"
	"image/color"
	"math"
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

// Plots writes perf-colocated.png, perf-e2e.png and perf-sustained.png into
// dir, each when the run has the data.
func Plots(r *results.Results, dir string) error {
	if r.Coloc != nil && len(r.Coloc.Runs) > 0 {
		if err := colocPlot(r.Coloc, filepath.Join(dir, "perf-colocated.png")); err != nil {
			return err
		}
	}
	if r.E2E != nil && len(r.E2E.Saturation) > 0 {
		if err := e2ePlot(r, filepath.Join(dir, "perf-e2e.png")); err != nil {
			return err
		}
	}
	if r.E2E != nil && len(r.E2E.Sustained) > 0 {
		if err := sustainedPlot(r.E2E.Sustained, r.E2E.SustainedOff, filepath.Join(dir, "perf-sustained.png")); err != nil {
			return err
		}
	}
	return nil
}

var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, color.RGBA{0x7f, 0x7f, 0x7f, 0xff}, color.RGBA{0xbc, 0xbd, 0x22, 0xff},
}

// byRate groups the steps of every search by X, sorted.
func byRate(c *results.Colocated) ([]float64, map[float64][]results.ColocStep) {
	m := map[float64][]results.ColocStep{}
	for _, run := range c.Runs {
		for _, s := range run.Steps {
			m[s.Rate] = append(m[s.Rate], s)
		}
	}
	var xs []float64
	for x := range m {
		xs = append(xs, x)
	}
	slices.Sort(xs)
	return xs, m
}

func addLine(p *plot.Plot, i int, name string, pts plotter.XYs) error {
	l, s, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	l.Color, s.Color = palette[i%len(palette)], palette[i%len(palette)]
	l.Width = vg.Points(1.5)
	s.Shape = plotutil.Shape(i)
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return nil
}

func colocPlot(c *results.Colocated, path string) error {
	xs, steps := byRate(c)
	// left: how late each stage ran (median over searches)
	left := plot.New()
	left.Title.Text = "Colocated run: how late each stage ran"
	left.X.Label.Text = "X, offered payments/s (every stage at once)"
	left.Y.Label.Text = "ms (log scale)"
	left.Legend.Top, left.Legend.Left = true, true
	left.Y.Scale = plot.LogScale{}
	left.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	for i, st := range []struct{ key, name string }{
		{"http", "HTTP: p99 latency (k6 → JSON handler)"}, {"redis", "Redis 2×EVALSHA: p99 start lag"},
		{"pg_insert", "Postgres api insert: mean start lag"}, {"pg_update", "Postgres worker update: mean start lag"},
		{"amqp", "RabbitMQ publish+confirm: p99 start lag"},
	} {
		var pts plotter.XYs
		for _, x := range xs {
			var v []float64
			for _, s := range steps[x] {
				y := s.Stages[st.key].LagMS
				if st.key == "http" {
					y = s.Stages[st.key].P99MS
				}
				v = append(v, math.Max(y, 0.1))
			}
			pts = append(pts, plotter.XY{X: x, Y: results.Median(v)})
		}
		if err := addLine(left, i, st.name, pts); err != nil {
			return err
		}
	}
	thr, err := plotter.NewLine(plotter.XYs{{X: xs[0], Y: 250}, {X: xs[len(xs)-1], Y: 250}})
	if err != nil {
		return err
	}
	thr.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	thr.Color = color.Gray{0x80}
	left.Add(thr)
	left.Legend.Add("a Go stage falls behind past 250 ms", thr)
	left.X.Tick.Marker = rateTicks(xs)
	left.Y.Max = 5000 // room for the legend above the lines

	// right: CPU cores per process group (median over searches)
	right := plot.New()
	right.Title.Text = "CPU by process group (cores)"
	right.X.Label.Text = "X, offered payments/s"
	right.Y.Label.Text = "cores"
	right.Legend.Top, right.Legend.Left = true, true
	right.Y.Min = 0
	right.X.Tick.Marker = rateTicks(xs)
	groups := []struct {
		name string
		keys []string
	}{
		{"Postgres", []string{"postgres"}}, {"RabbitMQ", []string{"rabbitmq"}}, {"Redis", []string{"redis"}},
		{"JSON handler", []string{"http"}}, {"k6", []string{"k6"}}, {"pgbench", []string{"pgbench-insert", "pgbench-update"}},
		{"Go stage clients", []string{"stage-redis", "stage-amqp"}}, {"other people's work", []string{"_others"}},
		{"machine busy (of 2)", []string{"_busy"}},
	}
	for i, g := range groups {
		var pts plotter.XYs
		for _, x := range xs {
			var v []float64
			for _, s := range steps[x] {
				sum := 0.0
				for _, k := range g.keys {
					switch k {
					case "_others":
						sum += s.CPU.Others
					case "_busy":
						sum += s.CPU.MachineBusy
					default:
						sum += s.CPU.Cores[k]
					}
				}
				v = append(v, sum)
			}
			pts = append(pts, plotter.XY{X: x, Y: results.Median(v)})
		}
		if err := addLine(right, i, g.name, pts); err != nil {
			return err
		}
	}
	return saveTiles(path, 14*vg.Inch, 5.5*vg.Inch, left, right)
}

// rateTicks labels exactly the rates that were run.
func rateTicks(xs []float64) plot.ConstantTicks {
	var t plot.ConstantTicks
	for _, x := range xs {
		t = append(t, plot.Tick{Value: x, Label: fmt.Sprintf("%.0f", x)})
	}
	return t
}

func saveTiles(path string, w, h vg.Length, plots ...*plot.Plot) error {
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Points(20), PadTop: vg.Points(8), PadBottom: vg.Points(8), PadLeft: vg.Points(8), PadRight: vg.Points(8)}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func e2ePlot(r *results.Results, path string) error {
	e := r.E2E
	var on, off, replay, chOn, chOff, apiOn, apiOff, wOn, wOff []float64
	for _, s := range e.Saturation {
		on, off, replay = append(on, s.On.Accepted), append(off, s.Off.Accepted), append(replay, s.Replay.Replayed)
		chOn, chOff = append(chOn, s.On.Charged), append(chOff, s.Off.Charged)
		if s.OnAlone != nil && s.OffAlone != nil {
			apiOn, apiOff = append(apiOn, s.OnAlone.API.Accepted), append(apiOff, s.OffAlone.API.Accepted)
			wOn, wOff = append(wOn, s.OnAlone.Drain.Charged), append(wOff, s.OffAlone.Drain.Charged)
		}
	}
	type bar struct {
		name  string
		v     float64
		label string // above the bar; its value when empty
	}
	bars := []bar{}
	if r.Coloc != nil {
		bars = append(bars, bar{"colocated\nceiling", r.Coloc.Ceiling(), ""})
	}
	bars = append(bars, bar{"sustained\nboundary on", bestHeld(e.Sustained), noneHeld(e.Sustained)})
	if len(e.SustainedOff) > 0 {
		bars = append(bars, bar{"sustained\nboundary off", bestHeld(e.SustainedOff), noneHeld(e.SustainedOff)})
	}
	bars = append(bars,
		bar{"accepted\nboundary on", results.Median(on), ""}, bar{"accepted\nboundary off", results.Median(off), ""},
		bar{"charged\nboundary on", results.Median(chOn), ""}, bar{"charged\nboundary off", results.Median(chOff), ""},
		bar{"replays\nboundary on", results.Median(replay), ""})
	if len(apiOn) > 0 {
		bars = append(bars,
			bar{"api alone\nboundary on", results.Median(apiOn), ""}, bar{"api alone\nboundary off", results.Median(apiOff), ""},
			bar{"workers alone\nboundary on", results.Median(wOn), ""}, bar{"workers alone\nboundary off", results.Median(wOff), ""})
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("End to end on %d cores: payments (or replays) per second, medians", r.Machine.Cores)
	p.Y.Label.Text = "per second"
	var vals plotter.Values
	var names, texts []string
	for _, b := range bars {
		vals = append(vals, b.v)
		names = append(names, b.name)
		if b.label == "" {
			b.label = fmt.Sprintf("%.0f", b.v)
		}
		texts = append(texts, b.label)
	}
	bc, err := plotter.NewBarChart(vals, vg.Points(38))
	if err != nil {
		return err
	}
	bc.Color = palette[0]
	bc.LineStyle.Width = 0
	p.Add(bc)
	labels, err := plotter.NewLabels(plotter.XYLabels{XYs: xysOf(vals), Labels: texts})
	if err != nil {
		return err
	}
	p.Add(labels)
	p.NominalX(names...)
	p.Y.Min = 0
	p.Y.Max = slices.Max([]float64(vals)) * 1.12
	return p.Save(vg.Length(len(bars))*vg.Inch+vg.Inch, 5*vg.Inch, path)
}

// bestHeld is the highest rate of ss that held, 0 if none did.
func bestHeld(ss []results.Sustained) float64 {
	best := 0.0
	for _, s := range ss {
		if s.OK && s.Rate > best {
			best = s.Rate
		}
	}
	return best
}

// noneHeld labels the bar of sustained runs ss when none of them held (a
// bar of 0 would read as a measured rate of 0): which rates were tried.
// Empty when one held or none ran.
func noneHeld(ss []results.Sustained) string {
	if len(ss) == 0 || bestHeld(ss) > 0 {
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

func xysOf(v plotter.Values) plotter.XYs {
	var out plotter.XYs
	for i, y := range v {
		out = append(out, plotter.XY{X: float64(i) - 0.15, Y: y})
	}
	return out
}

// sustainedPlot draws the pending payments of every sustained run: the
// boundary's copy, and beside it on the same scale the copy without the
// boundary (the reference) when the run has one.
func sustainedPlot(on, off []results.Sustained, path string) error {
	if len(off) == 0 {
		p, err := sustainedTile(on, "Sustained runs: payments pending (accepted, not yet charged)")
		if err != nil {
			return err
		}
		return p.Save(9*vg.Inch, 4.5*vg.Inch, path)
	}
	left, err := sustainedTile(on, "Boundary on: payments pending (accepted, not yet charged)")
	if err != nil {
		return err
	}
	right, err := sustainedTile(off, "Boundary off (the reference): payments pending")
	if err != nil {
		return err
	}
	top := max(left.Y.Max, right.Y.Max)
	left.Y.Max, right.Y.Max = top, top
	return saveTiles(path, 16*vg.Inch, 5*vg.Inch, left, right)
}

// sustainedTile is one copy's sustained runs: a line per run, with bands
// where Redis rewrote its AOF or Postgres vacuumed.
func sustainedTile(ss []results.Sustained, title string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds into the run"
	p.Y.Label.Text = "pending payments"
	p.Legend.Top, p.Legend.Left = true, true
	p.Y.Min = 0
	legended := map[string]bool{}
	for i, s := range ss {
		var pts plotter.XYs
		for j, y := range s.Pending {
			pts = append(pts, plotter.XY{X: float64(j+1) * s.SampleEvery, Y: y})
		}
		if len(pts) == 0 {
			continue
		}
		held := "held"
		if !s.OK {
			held = "did not hold"
		}
		r, g, b, _ := palette[i%len(palette)].RGBA()
		for _, band := range []struct {
			flags  []bool
			color  color.Color
			width  vg.Length
			legend string
		}{
			{s.Vacuuming, color.NRGBA{0, 0, 0, 0x28}, vg.Points(16), "widest grey band: Postgres vacuuming"},
			{s.Rewriting, color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 0x60}, vg.Points(8), "wide band: Redis rewriting its AOF"},
		} {
			for _, span := range spans(band.flags, pts) {
				l, err := plotter.NewLine(span)
				if err != nil {
					return nil, err
				}
				l.Color, l.Width = band.color, band.width
				p.Add(l)
				if !legended[band.legend] {
					p.Legend.Add(band.legend, l)
					legended[band.legend] = true
				}
			}
		}
		if err := addLine(p, i, fmt.Sprintf("%.0f payments/s offered (%s)", s.Rate, held), pts); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// spans cuts pts (one per sample) into the stretches where flags is true,
// each widened by the sample either side so that a one-sample stretch still
// draws a segment.
func spans(flags []bool, pts plotter.XYs) []plotter.XYs {
	var spans []plotter.XYs
	for i := 0; i < len(flags) && i < len(pts); i++ {
		if !flags[i] {
			continue
		}
		j := i
		for j+1 < len(flags) && j+1 < len(pts) && flags[j+1] {
			j++
		}
		lo, hi := max(i-1, 0), min(j+1, len(pts)-1)
		spans = append(spans, append(plotter.XYs(nil), pts[lo:hi+1]...))
		i = j
	}
	return spans
}
