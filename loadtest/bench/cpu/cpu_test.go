package cpu_test

import (
	"os"
	"syscall"
	"testing"

	"github.com/oncepay/oncepay/loadtest/bench/cpu"
)

func TestTreesCountsThisProcess(t *testing.T) {
	t.Parallel()
	// Burn CPU until getrusage (not /proc, which Trees reads) says this
	// process used 100 ms: several of /proc's 10 ms ticks, whatever the
	// machine's speed (a fixed loop took less than one tick on a fast one).
	x := 0
	for used(t) < 0.1 {
		for i := range 1_000_000 {
			x += i
		}
	}
	_ = x
	got := cpu.Trees(map[string][]int{"self": {os.Getpid()}, "gone": {1 << 30}})
	if got["self"] < 0.05 {
		t.Errorf("this process used %v s of CPU by /proc, want >= 0.05 (getrusage says %.3f s)", got["self"], used(t))
	}
	if got["gone"] != 0 {
		t.Errorf("a pid that does not exist used %v s, want 0", got["gone"])
	}
}

func TestMachine(t *testing.T) {
	t.Parallel()
	if busy := cpu.MachineBusy(); busy <= 0 {
		t.Errorf("MachineBusy = %v s, want > 0", busy)
	}
}

// used is this process's user + system CPU time so far, by getrusage.
func used(t *testing.T) float64 {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
