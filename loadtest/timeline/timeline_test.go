package timeline_test

import (
	"bytes"
	"image/png"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/record"
	"github.com/oncepay/oncepay/loadtest/timeline"
)

var start = time.Date(2025, 11, 21, 8, 0, 0, 0, time.UTC)

func at(d time.Duration) float64 { return float64(start.Add(d).UnixMicro()) / 1000 }

func TestBuild(t *testing.T) {
	t.Parallel()
	attempts := []record.Attempt{
		{TS: at(100 * time.Millisecond), N: 1, Class: record.ClassOK},
		{TS: at(900 * time.Millisecond), N: 1, Class: record.ClassCutOff},
		{TS: at(1500 * time.Millisecond), N: 2, Class: record.ClassConflict},
		{TS: at(2100 * time.Millisecond), N: 3, Class: record.ClassOK},
		{TS: at(-time.Second), N: 1, Class: record.ClassOK}, // before the start: ignored
	}
	got := timeline.Build(start, attempts, []time.Time{start.Add(2500 * time.Millisecond)})
	want := timeline.Series{
		Start:   start,
		OK:      []float64{1, 0, 1},
		Errors:  []float64{1, 0, 0},
		Retries: []float64{0, 1, 1},
		Settled: []float64{0, 0, 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Build (-want +got):\n%s", diff)
	}
}

// TestRender draws a synthetic run; set TIMELINE_OUT=file.png to look at it.
func TestRender(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var attempts []record.Attempt
	var settled []time.Time
	for s := range 180 {
		rate := 40
		if s >= 54 && s < 70 {
			rate = 38
		}
		for i := range rate {
			d := time.Duration(s)*time.Second + time.Duration(i)*time.Second/time.Duration(rate)
			c := record.ClassOK
			if (s == 10 || s == 46) && i < 4 {
				c = record.ClassCutOff
			}
			attempts = append(attempts, record.Attempt{TS: at(d), N: 1 + rng.IntN(2)*boolInt(s%18 == 11), Class: c})
			if s < 54 || s >= 70 {
				settled = append(settled, start.Add(d+50*time.Millisecond))
			}
		}
	}
	markers := []timeline.Marker{
		{At: 10 * time.Second, Label: "kill api-1", Kind: "kill"},
		{At: 27 * time.Second, Label: "kill worker-1", Kind: "kill"},
		{At: 54 * time.Second, Label: "restart rabbitmq", Kind: "restart"},
		{At: 99 * time.Second, Label: "restart redis", Kind: "restart"},
		{At: 140 * time.Second, Label: "flush redis", Kind: "flush"},
	}
	var buf bytes.Buffer
	if err := timeline.Render(&buf, timeline.Build(start, attempts, settled), markers, "run r1", 12*timeline.Inch, 5*timeline.Inch); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 400 {
		t.Errorf("image is %dx%d, want about 1200x500", b.Dx(), b.Dy())
	}
	if out := os.Getenv("TIMELINE_OUT"); out != "" {
		if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
