// Package timeline draws a fault-test run over time: client throughput,
// errors and retries, and payments settled by the workers, per second, with
// a vertical marker at every fault.
package timeline

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/oncepay/oncepay/loadtest/record"
)

// Series are per-second counts, index i covering [Start+i s, Start+i+1 s).
type Series struct {
	Start   time.Time
	OK      []float64 // 2xx answers
	Errors  []float64 // attempts that failed: transport errors and 5xx
	Retries []float64 // attempts after the first of their request
	Settled []float64 // payments that reached succeeded or failed
}

// Marker is a vertical line at a fault.
type Marker struct {
	At    time.Duration // since Start
	Label string        // e.g. "kill api-1"
	Kind  string        // the fault's action (kill, restart, flush, pause, outage, delete-queue, latency, ...): picks the colour
}

// Build buckets attempts and settle times by second from start. Times
// before start are ignored.
func Build(start time.Time, attempts []record.Attempt, settled []time.Time) Series {
	s := Series{Start: start}
	grow := func(i int) {
		for len(s.OK) <= i {
			s.OK, s.Errors, s.Retries, s.Settled = append(s.OK, 0), append(s.Errors, 0), append(s.Retries, 0), append(s.Settled, 0)
		}
	}
	bucket := func(t time.Time) int {
		if t.Before(start) {
			return -1
		}
		i := int(t.Sub(start) / time.Second)
		grow(i)
		return i
	}
	for _, a := range attempts {
		i := bucket(a.Time())
		if i < 0 {
			continue
		}
		if a.N > 1 {
			s.Retries[i]++
		}
		switch a.Class {
		case record.ClassOK:
			s.OK[i]++
		case record.ClassCutOff, record.ClassRefused, record.ClassTimeout, record.ClassTransport,
			record.ClassUnavailable, record.ClassServerError:
			s.Errors[i]++
		}
	}
	for _, t := range settled {
		if i := bucket(t); i >= 0 {
			s.Settled[i]++
		}
	}
	return s
}

var (
	colOK      = color.RGBA{R: 0x1b, G: 0x9e, B: 0x77, A: 0xff} // green
	colSettled = color.RGBA{R: 0x4c, G: 0x72, B: 0xb0, A: 0xff} // blue
	colErrors  = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff} // red
	colRetries = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff} // orange
	markerCol  = map[string]color.Color{
		"kill":         color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff},
		"restart":      color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
		"flush":        color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
		"pause":        color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
		"outage":       color.RGBA{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff},
		"delete-queue": color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
		"latency":      color.RGBA{R: 0x00, G: 0x3f, B: 0x5c, A: 0xff},
		"partition":    color.RGBA{R: 0x7f, G: 0x00, B: 0x00, A: 0xff},
		"reset_peer":   color.RGBA{R: 0x8b, G: 0x45, B: 0x13, A: 0xff},
		"slow":         color.RGBA{R: 0x55, G: 0x6b, B: 0x2f, A: 0xff},
	}
)

// Render draws s and the markers as a PNG of width × height inches at 100
// dpi, with title on top.
func Render(w io.Writer, s Series, markers []Marker, title string, width, height vg.Length) error {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = "seconds since the load started"
	p.Y.Label.Text = "per second"
	p.Add(plotter.NewGrid())
	series := plot.NewLegend()

	ymax := 1.0
	for _, v := range [][]float64{s.OK, s.Errors, s.Retries, s.Settled} {
		for _, x := range v {
			ymax = math.Max(ymax, x)
		}
	}
	ymax *= 1.25 // room for the marker labels
	p.Y.Min, p.Y.Max = 0, ymax
	p.X.Min = 0
	p.X.Max = math.Max(float64(len(s.OK)), 1)
	p.X.Tick.Marker = steps(xStep(p.X.Max))
	p.Y.Tick.Marker = steps(yStep(ymax))

	for _, m := range markers {
		x := m.At.Seconds()
		line, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: ymax}})
		if err != nil {
			return err
		}
		line.Color = markerCol[m.Kind]
		if line.Color == nil {
			line.Color = color.Gray{Y: 0x80}
		}
		line.Width = vg.Points(1)
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(line)
		style := text.Style{Color: line.Color, Font: p.X.Tick.Label.Font, Rotation: math.Pi / 2,
			XAlign: text.XRight, YAlign: text.YBottom, Handler: p.X.Tick.Label.Handler}
		style.Font.Size = vg.Points(9)
		labels, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x, Y: ymax}}, Labels: []string{m.Label}})
		if err != nil {
			return err
		}
		labels.TextStyle = []text.Style{style}
		labels.Offset = vg.Point{X: -vg.Points(2), Y: -vg.Points(3)}
		p.Add(labels)
	}

	for _, l := range []struct {
		name  string
		ys    []float64
		col   color.Color
		width float64
	}{
		{"2xx answers", s.OK, colOK, 1.6},
		{"payments settled", s.Settled, colSettled, 1.2},
		{"retries", s.Retries, colRetries, 1.2},
		{"errors (transport, 5xx)", s.Errors, colErrors, 1.4},
	} {
		xys := make(plotter.XYs, len(l.ys))
		for i, y := range l.ys {
			xys[i] = plotter.XY{X: float64(i) + 0.5, Y: y}
		}
		if len(xys) == 0 {
			continue
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		line.Color = l.col
		line.Width = vg.Points(l.width)
		p.Add(line)
		series.Add(l.name, line)
	}
	// A legend entry per marker kind that occurs, four to a column.
	legends := []*plot.Legend{&series}
	seen := map[string]bool{}
	for _, m := range markers {
		if seen[m.Kind] {
			continue
		}
		if len(seen)%4 == 0 {
			l := plot.NewLegend()
			legends = append(legends, &l)
		}
		seen[m.Kind] = true
		line, _ := plotter.NewLine(plotter.XYs{{}, {}})
		line.Color, line.Dashes = markerCol[m.Kind], []vg.Length{vg.Points(4), vg.Points(3)}
		legends[len(legends)-1].Add(fmt.Sprintf("fault: %s", m.Kind), line)
	}

	// The plot above, the legends side by side in a strip below it.
	img := vgimg.New(width, height)
	dc := draw.New(img)
	strip := 4*series.TextStyle.Font.Size*1.2 + vg.Points(4)
	p.Draw(draw.Crop(dc, 0, 0, strip, 0))
	below := draw.Crop(dc, 0, 0, 0, strip-dc.Max.Y+dc.Min.Y)
	for i, l := range legends {
		l.Top, l.Left = true, true
		l.XOffs = vg.Length(i)*vg.Points(220) + vg.Points(60)
		l.YOffs = -vg.Points(4)
		l.Draw(below)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w); err != nil {
		return fmt.Errorf("render timeline: %w", err)
	}
	return nil
}

// steps ticks an axis every step, labelled as integers, with minor ticks
// at half steps.
type steps float64

func (st steps) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for v := math.Ceil(min/float64(st)*2) * float64(st) / 2; v <= max; v += float64(st) / 2 {
		t := plot.Tick{Value: v}
		if math.Mod(v, float64(st)) == 0 {
			t.Label = fmt.Sprintf("%.0f", v)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// xStep picks a tick step for a run of seconds: about ten labels.
func xStep(seconds float64) float64 {
	for _, st := range []float64{5, 10, 15, 30, 60, 120, 300, 600} {
		if seconds/st <= 12 {
			return st
		}
	}
	return 1200
}

// yStep picks a tick step for rates up to max: about five labels.
func yStep(max float64) float64 {
	for _, st := range []float64{1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000} {
		if max/st <= 6 {
			return st
		}
	}
	return 5000
}

// Inch is a convenience for Render's width and height.
const Inch = vg.Inch
