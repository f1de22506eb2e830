package cpu

import "testing"

// TestParseMachineCountsSteal: the hypervisor's steal time is busy (so a
// Span reports it under Others), guest time is not counted twice, and
// idle and iowait are not busy.
func TestParseMachineCountsSteal(t *testing.T) {
	t.Parallel()
	//                  user nice system idle iowait irq softirq steal guest guest_nice
	m := parseMachine("cpu  100  10   50     800  20     5   15      40    30    3")
	if want := (100 + 10 + 50 + 5 + 15 + 40) / 100.0; m.Busy != want {
		t.Errorf("Busy = %v s, want %v (user, nice, system, irq, softirq and steal)", m.Busy, want)
	}
	if want := (100 + 10 + 50 + 800 + 20 + 5 + 15 + 40) / 100.0; m.Total != want {
		t.Errorf("Total = %v s, want %v (guest time is already in user and nice)", m.Total, want)
	}
	if got := parseMachine(""); got != (Machine{}) {
		t.Errorf("empty line: %+v, want zero", got)
	}
}
