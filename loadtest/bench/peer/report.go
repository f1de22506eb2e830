package peer

import (
	"fmt"
	"image/color"
	"os"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Table renders the summary and the targets as Markdown.
func Table(r *Results) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| op | c | library | ops/s | p50 ms | p99 ms | CPU µs/op client + Redis = total | Redis cmds/op (sent) |\n")
	fmt.Fprintf(&b, "|---|---:|---|---:|---:|---:|---:|---:|\n")
	for _, s := range r.Summary {
		fmt.Fprintf(&b, "| %s | %d | %s | %.0f | %.2f | %.2f | %.1f + %.1f = %.1f | %.1f (%.1f) |\n",
			s.Op, s.Concurrency, s.Lib, s.OpsPerSec, s.P50ms, s.P99ms, s.ClientCPUus, s.RedisCPUus, s.TotalCPUus, s.RedisCmds, s.RedisRequests)
	}
	if len(r.Targets) > 0 {
		fmt.Fprintf(&b, "\n| target (against %s) | library | ratio | want | met |\n|---|---|---:|---|---|\n", LibPeer)
		for _, t := range r.Targets {
			met := "no"
			if t.Met {
				met = "yes"
			}
			fmt.Fprintf(&b, "| %s | %s | %.2f | %s | %s |\n", t.Name, t.Lib, t.Ratio, t.Want, met)
		}
	}
	fmt.Fprintf(&b, "\nMedians of %d interleaved rounds of %s per cell; %d CPUs, load average %s before, %s after.\n",
		r.Rounds, r.Duration, r.Machine.CPUs, r.Machine.LoadAvgBefore, r.Machine.LoadAvgAfter)
	return b.String()
}

var libColors = map[string]color.Color{
	LibIdem:          color.RGBA{R: 0x22, G: 0x55, B: 0x99, A: 0xff},
	LibIdemUnbatched: color.RGBA{R: 0x99, G: 0xbb, B: 0xdd, A: 0xff},
	LibIdemAuto:      color.RGBA{R: 0x66, G: 0x99, B: 0x66, A: 0xff},
	LibPeer:          color.RGBA{R: 0xdd, G: 0x88, B: 0x33, A: 0xff},
}

// Plot writes a PNG of two panels, ops/s and total CPU µs/op per cell, one
// bar per library.
func Plot(r *Results, path string) error {
	type cellID struct {
		op string
		c  int
	}
	var cells []cellID
	var libs []string
	for _, s := range r.Summary {
		id := cellID{s.Op, s.Concurrency}
		if !slices.Contains(cells, id) {
			cells = append(cells, id)
		}
		if !slices.Contains(libs, s.Lib) {
			libs = append(libs, s.Lib)
		}
	}
	value := func(lib string, id cellID, f func(Summary) float64) float64 {
		for _, s := range r.Summary {
			if s.Lib == lib && s.Op == id.op && s.Concurrency == id.c {
				return f(s)
			}
		}
		return 0
	}
	names := make([]string, len(cells))
	for i, id := range cells {
		names[i] = fmt.Sprintf("%s c=%d", id.op, id.c)
	}
	panel := func(title, ylabel string, f func(Summary) float64) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.Y.Label.Text = ylabel
		w := vg.Points(14)
		for i, lib := range libs {
			vals := make(plotter.Values, len(cells))
			for j, id := range cells {
				vals[j] = value(lib, id, f)
			}
			bars, err := plotter.NewBarChart(vals, w)
			if err != nil {
				return nil, err
			}
			bars.Color = libColors[lib]
			bars.LineStyle.Width = 0
			bars.Offset = vg.Length(float64(i)-float64(len(libs)-1)/2) * w
			p.Add(bars)
			p.Legend.Add(lib, bars)
		}
		p.Legend.Top = true
		p.Legend.Left = true
		p.Legend.XOffs = vg.Millimeter * 3
		p.Y.Min = 0
		p.Y.Max *= 1.3 // room for the legend
		p.NominalX(names...)
		return p, nil
	}
	ops, err := panel("throughput", "ops/s", func(s Summary) float64 { return s.OpsPerSec })
	if err != nil {
		return err
	}
	cpu, err := panel("CPU per operation (client + Redis)", "µs/op", func(s Summary) float64 { return s.TotalCPUus })
	if err != nil {
		return err
	}
	const width, height = 11 * vg.Inch, 4.5 * vg.Inch
	img := vgimg.New(width, height)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{{ops, cpu}}, tiles, dc)
	ops.Draw(canvases[0][0])
	cpu.Draw(canvases[0][1])
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
