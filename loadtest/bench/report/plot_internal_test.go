package report

import (
	"testing"

	"github.com/oncepay/oncepay/loadtest/bench/results"
)

// TestNoneHeld: the sustained bar says which rates were tried when none
// held, instead of a bare 0, and keeps its number when one held.
func TestNoneHeld(t *testing.T) {
	t.Parallel()
	run := func(rate float64, ok bool) results.Sustained { return results.Sustained{Rate: rate, OK: ok} }
	for _, tt := range []struct {
		name string
		ss   []results.Sustained
		want string
	}{
		{"no runs", nil, ""},
		{"one held", []results.Sustained{run(600, false), run(400, true), run(500, false)}, ""},
		{"none held", []results.Sustained{run(530, false), run(480, false), run(440, false)}, "none held\n(440-530 tried)"},
		{"one tried", []results.Sustained{run(600, false)}, "none held\n(600 tried)"},
	} {
		if got := noneHeld(tt.ss); got != tt.want {
			t.Errorf("%s: noneHeld = %q, want %q", tt.name, got, tt.want)
		}
	}
}
