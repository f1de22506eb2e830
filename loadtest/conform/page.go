package conform

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"
)

//go:embed page.html
var pageHTML string

// maxLanes bounds the keys the timeline draws.
const maxLanes = 60

// WriteHTML writes the report as one self-contained HTML page: the matrix
// with its evidence, the storm's timeline and the history verdict.
func (r *Report) WriteHTML(w io.Writer) error {
	tmpl, err := template.New("page").Parse(pageHTML)
	if err != nil {
		return fmt.Errorf("page template: %w", err)
	}
	data := struct {
		R                          *Report
		Took, StormTook, CheckTook time.Duration
		Lanes                      int
		Timeline                   template.HTML
	}{R: r, Took: r.Took.Round(time.Millisecond), Lanes: maxLanes}
	if r.Storm != nil {
		data.StormTook = r.Storm.Took.Round(time.Millisecond)
		data.CheckTook = r.Storm.Verdict.Took.Round(time.Millisecond)
		data.Timeline = template.HTML(timeline(r.Storm))
	}
	return tmpl.Execute(w, data)
}

// timeline draws the storm's attempts as an SVG, one lane per key.
func timeline(s *StormReport) string {
	lanes := map[string]int{}
	var order []string
	for _, a := range s.history {
		if _, ok := lanes[a.Key]; !ok && len(order) < maxLanes {
			lanes[a.Key] = len(order)
			order = append(order, a.Key)
		}
	}
	const width, lane = 1000.0, 8.0
	total := float64(s.Took)
	if total <= 0 {
		total = 1
	}
	x := func(t time.Time) float64 { return float64(t.Sub(s.Start)) / total * width }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" style="border:1px solid #ccc">`, width, float64(len(order))*lane+4)
	for _, a := range s.history {
		i, ok := lanes[a.Key]
		if !ok {
			continue
		}
		color := "#888"
		switch {
		case a.Ex.Status == 0 || a.Ex.Status >= 500:
			color = "#c00"
		case is2xx(a.Ex.Status):
			color = "#2a2"
		case a.Ex.Status == 409 || a.Ex.Status == 429:
			color = "#e80"
		case a.Ex.Status == 422:
			color = "#36c"
		}
		x0, x1 := x(a.Ex.Start), x(a.Ex.End)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`,
			x0, float64(i)*lane+2, max(x1-x0, 1), lane-2, color, template.HTMLEscapeString(a.Ex.String()))
	}
	for _, f := range s.Faults {
		fx := float64(f.At) / total * width
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="0" y2="%.0f" stroke="#000"/>`, fx, fx, float64(len(order))*lane+4)
	}
	b.WriteString(`</svg>`)
	return b.String()
}
