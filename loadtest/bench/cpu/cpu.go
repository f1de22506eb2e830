// Package cpu accounts CPU time: of whole process trees (a server and every
// process it forked, such as Postgres backends), and of the machine, from
// /proc. The benchmark uses it to say which stage took the cores.
package cpu

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ticksPerSecond is USER_HZ, 100 on every Linux the benchmark runs on.
const ticksPerSecond = 100

type procStat struct {
	ppid  int
	ticks uint64 // utime + stime + cutime + cstime
}

// readAll reads pid -> (ppid, utime+stime) of every process.
func readAll() map[int]procStat {
	out := map[int]procStat{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range dirs {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime(14) stime(15) cutime cstime; comm
		// may hold spaces.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 15 {
			continue
		}
		var pid, ppid int
		var ticks [4]uint64
		fmt.Sscan(path[len("/proc/"):], &pid)
		fmt.Sscan(f[1], &ppid)
		for i := range ticks {
			fmt.Sscan(f[11+i], &ticks[i])
		}
		out[pid] = procStat{ppid: ppid, ticks: ticks[0] + ticks[1] + ticks[2] + ticks[3]}
	}
	return out
}

// Trees returns, for each named set of root pids, the CPU seconds used so
// far by those processes and all their descendants: the live ones, and
// through each process's children times (cutime, cstime) the ended ones its
// parent waited for, such as Postgres backends that disconnected. A pid
// that is a descendant of several roots counts once per name.
func Trees(roots map[string][]int) map[string]float64 {
	all := readAll()
	children := map[int][]int{}
	for pid, s := range all {
		children[s.ppid] = append(children[s.ppid], pid)
	}
	out := make(map[string]float64, len(roots))
	for name, pids := range roots {
		var ticks uint64
		seen := map[int]bool{}
		stack := append([]int(nil), pids...)
		for len(stack) > 0 {
			pid := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[pid] {
				continue
			}
			seen[pid] = true
			if s, ok := all[pid]; ok {
				ticks += s.ticks
				stack = append(stack, children[pid]...)
			}
		}
		out[name] = float64(ticks) / ticksPerSecond
	}
	return out
}

// MachineBusy is the machine's busy CPU time so far, in seconds summed over
// cores: everything but idle and iowait, steal included (time the
// hypervisor gave the VM's cores to something else belongs to no process,
// so a Span reports it under Others).
func MachineBusy() float64 {
	b, _ := os.ReadFile("/proc/stat")
	line, _, _ := strings.Cut(string(b), "\n")
	return parseMachine(line)
}

// parseMachine reads the "cpu" line of /proc/stat: user nice system idle
// iowait irq softirq steal guest guest_nice, in ticks. Guest and
// guest_nice are already in user and nice.
func parseMachine(line string) (busy float64) {
	for i, v := range strings.Fields(line) {
		if n, _ := strconv.ParseFloat(v, 64); i > 0 && i <= 8 && i != 4 && i != 5 { // not idle, iowait
			busy += n / ticksPerSecond
		}
	}
	return busy
}

// LoadAvg returns the 1, 5 and 15 minute load averages.
func LoadAvg() [3]float64 {
	var out [3]float64
	b, _ := os.ReadFile("/proc/loadavg")
	fmt.Sscan(string(b), &out[0], &out[1], &out[2])
	return out
}

// Span measures CPU use between Start and Stop.
type Span struct {
	roots   map[string][]int
	before  map[string]float64
	machine float64
}

// Start begins a span over the named process trees.
func Start(roots map[string][]int) *Span {
	return &Span{roots: roots, before: Trees(roots), machine: MachineBusy()}
}

// Usage is CPU use over a span, in cores (1.0 = one core busy all along).
type Usage struct {
	Cores       map[string]float64 `json:"cores"`        // per named tree
	MachineBusy float64            `json:"machine_busy"` // whole machine, cores
	Others      float64            `json:"others"`       // busy minus the named trees: other people's work
}

// Stop ends the span; seconds is its wall time. finished adds the CPU
// seconds of processes that ran and ended within the span and are not in
// any tree (exec.Cmd's ProcessState user + system time).
func (s *Span) Stop(seconds float64, finished map[string]float64) Usage {
	after, m := Trees(s.roots), MachineBusy()
	u := Usage{Cores: map[string]float64{}}
	if seconds <= 0 {
		return u
	}
	for name := range s.roots {
		u.Cores[name] = (after[name] - s.before[name]) / seconds
	}
	for name, secs := range finished {
		u.Cores[name] += secs / seconds
	}
	named := 0.0
	for _, c := range u.Cores {
		named += c
	}
	u.MachineBusy = (m - s.machine) / seconds
	u.Others = max(u.MachineBusy-named, 0)
	return u
}
