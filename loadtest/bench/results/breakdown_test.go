package results_test

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/oncepay/oncepay/loadtest/bench/results"
)

func TestHistTiming(t *testing.T) {
	t.Parallel()
	bounds := []float64{.0001, .0002, .0005, .001}
	for _, c := range []struct {
		name string
		h    results.Hist
		want results.Timing
	}{
		{"empty", results.Hist{Bounds: bounds, Cum: []float64{0, 0, 0, 0}}, results.Timing{}},
		// 10 observations, 5th of them (the p50 rank) halfway into the (0.2, 0.5] ms bucket.
		{"interpolated", results.Hist{Bounds: bounds, Cum: []float64{1, 3, 7, 10}, Sum: .003, Count: 10}, results.Timing{N: 10, MeanMS: .3, P50MS: .35}},
		{"lowest bucket from 0", results.Hist{Bounds: bounds, Cum: []float64{4, 4, 4, 4}, Sum: .0002, Count: 4}, results.Timing{N: 4, MeanMS: .05, P50MS: .05}},
		{"above every bound", results.Hist{Bounds: bounds, Cum: []float64{0, 0, 0, 1}, Sum: .03, Count: 10}, results.Timing{N: 10, MeanMS: 3, P50MS: 1}},
	} {
		got := c.h.Timing()
		if diff := cmp.Diff(c.want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" {
			t.Errorf("%s: Timing() (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestHistSubAdd: the observations between two readings of two replicas'
// histograms, summed.
func TestHistSubAdd(t *testing.T) {
	t.Parallel()
	b := []float64{.001, .002}
	r1 := results.Hist{Bounds: b, Cum: []float64{5, 10}, Sum: .01, Count: 10}.Sub(results.Hist{Bounds: b, Cum: []float64{1, 2}, Sum: .002, Count: 2})
	r2 := results.Hist{Bounds: b, Cum: []float64{3, 4}, Sum: .004, Count: 4}.Sub(results.Hist{})
	got := results.Hist{}.Add(r1).Add(r2)
	want := results.Hist{Bounds: b, Cum: []float64{7, 12}, Sum: .012, Count: 12}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-12 })); diff != "" {
		t.Errorf("sum of the differences (-want +got):\n%s", diff)
	}
	if other := got.Add(results.Hist{Bounds: []float64{1}, Cum: []float64{1}, Count: 1}); !cmp.Equal(other, got) {
		t.Errorf("adding a histogram with other bounds changed it: %+v", other)
	}
}

func TestBreakdownWhere(t *testing.T) {
	t.Parallel()
	b := &results.Breakdown{Begin: results.Timing{P50MS: .2}, Complete: results.Timing{P50MS: .15},
		FloorBegin: results.Timing{P50MS: .12}, FloorComplete: results.Timing{P50MS: .1},
		PacedBegin: results.Timing{P50MS: .2}, PacedComplete: results.Timing{P50MS: .1},
		ServerOn: results.Timing{N: 1, P50MS: 1.4}, ServerOff: results.Timing{N: 1, P50MS: 1.0}}
	want := "of the +0.50 ms overhead the client saw, +0.40 ms is inside the api (server-side p50, on - off) and +0.10 ms outside it " +
		"(k6, network, accept); the api's Begin + Complete take 0.35 ms (p50s) where the floor's take 0.22 ms back to back " +
		"and 0.30 ms paced at one replica's rate"
	if got := b.Where(.5); got != want {
		t.Errorf("Where(0.5) =\n%s\nwant\n%s", got, want)
	}
	if (&results.Breakdown{}).Known() || (*results.Breakdown)(nil).Known() || !b.Known() {
		t.Error("Known: want false for an empty or nil breakdown, true for one with both server timings")
	}
}
