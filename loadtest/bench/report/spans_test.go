package report

import (
	"testing"

	"gonum.org/v1/plot/plotter"
)

func TestSpansWidenEachStretchByASample(t *testing.T) {
	t.Parallel()
	pts := plotter.XYs{{X: 1}, {X: 2}, {X: 3}, {X: 4}, {X: 5}, {X: 6}}
	got := spans([]bool{true, false, false, true, true, false}, pts)
	want := [][]float64{{1, 2}, {3, 4, 5, 6}}
	if len(got) != len(want) {
		t.Fatalf("%d spans, want %d: %v", len(got), len(want), got)
	}
	for i, span := range got {
		var xs []float64
		for _, p := range span {
			xs = append(xs, p.X)
		}
		if len(xs) != len(want[i]) {
			t.Fatalf("span %d: %v, want %v", i, xs, want[i])
		}
		for j := range xs {
			if xs[j] != want[i][j] {
				t.Errorf("span %d: %v, want %v", i, xs, want[i])
			}
		}
	}
	if got := spans(nil, pts); len(got) != 0 {
		t.Errorf("no samples: %v", got)
	}
}
