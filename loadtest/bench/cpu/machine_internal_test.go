package cpu

import "testing"

// TestParseMachineCountsSteal: the hypervisor's steal time is busy (so a
// Span reports it under Others), guest time is not counted twice, and
// idle and iowait are not busy.
func TestParseMachineCountsSteal(t *testing.T) {
	t.Parallel()
	//                     user nice system idle iowait irq softirq steal guest guest_nice
	got := parseMachine("cpu  100  10   50     800  20     5   15      40    30    3")
	if want := (100 + 10 + 50 + 5 + 15 + 40) / 100.0; got != want {
		t.Errorf("busy = %v s, want %v (user, nice, system, irq, softirq and steal)", got, want)
	}
	if got := parseMachine(""); got != 0 {
		t.Errorf("empty line: %v, want 0", got)
	}
}
