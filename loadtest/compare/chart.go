package compare

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var colColumn = map[Column]color.Color{
	DoubleCharges:     color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	PaymentsLost:      color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	MismatchedReplays: color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	StuckRecords:      color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	Other:             color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// Chart draws rows as grouped bars, one group per strategy and one bar per
// violation column, as a PNG of the given size, with title on top. A
// strategy with no bar is labelled "not caught this run".
func Chart(w io.Writer, rows []Row, title string, width, height vg.Length) error {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "violations in the run"
	p.Legend.Top = true
	p.Legend.Left = false

	_, cols := header(rows)
	names := make([]string, len(rows))
	ymax := 1.0
	for i, r := range rows {
		names[i] = r.Strategy
		for _, c := range cols {
			ymax = math.Max(ymax, float64(r.Counts[c]))
		}
	}
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	p.Add(grid)
	barWidth := vg.Points(14)
	for j, c := range cols {
		vals := make(plotter.Values, len(rows))
		for i, r := range rows {
			vals[i] = float64(r.Counts[c])
		}
		bars, err := plotter.NewBarChart(vals, barWidth)
		if err != nil {
			return err
		}
		bars.Color = colColumn[c]
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(float64(j)-float64(len(cols)-1)/2) * barWidth
		p.Add(bars)
		p.Legend.Add(string(c), bars)
	}
	var quiet plotter.XYs
	var quietLabels []string
	for i, r := range rows {
		if r.Violations() == 0 {
			quiet = append(quiet, plotter.XY{X: float64(i), Y: ymax * 0.04})
			quietLabels = append(quietLabels, "not caught this run")
		}
	}
	if len(quiet) > 0 {
		labels, err := plotter.NewLabels(plotter.XYLabels{XYs: quiet, Labels: quietLabels})
		if err != nil {
			return err
		}
		for i := range labels.TextStyle {
			labels.TextStyle[i].XAlign = draw.XCenter
			labels.TextStyle[i].Color = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
		}
		p.Add(labels)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(rows))-0.4 // whole groups at both ends
	p.Y.Min, p.Y.Max = 0, ymax*1.5                  // room for the legend above the bars

	img := vgimg.New(width, height)
	p.Draw(draw.New(img))
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w); err != nil {
		return fmt.Errorf("render comparison chart: %w", err)
	}
	return nil
}
