package cpu_test

import (
	"os"
	"testing"

	"github.com/oncepay/oncepay/loadtest/bench/cpu"
)

func TestTreesCountsThisProcess(t *testing.T) {
	t.Parallel()
	x := 0
	for i := range 20_000_000 { // some CPU time to see
		x += i
	}
	_ = x
	got := cpu.Trees(map[string][]int{"self": {os.Getpid()}, "gone": {1 << 30}})
	if got["self"] <= 0 {
		t.Errorf("this process used %v s of CPU, want > 0", got["self"])
	}
	if got["gone"] != 0 {
		t.Errorf("a pid that does not exist used %v s, want 0", got["gone"])
	}
}

func TestMachine(t *testing.T) {
	t.Parallel()
	m := cpu.ReadMachine()
	if m.Total <= 0 || m.Busy < 0 || m.Busy > m.Total {
		t.Errorf("ReadMachine = %+v: want 0 <= busy <= total, total > 0", m)
	}
}
