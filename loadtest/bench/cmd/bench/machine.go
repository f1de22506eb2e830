package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"syscall"

	"github.com/oncepay/oncepay/loadtest/bench/cpu"
	"github.com/oncepay/oncepay/loadtest/bench/results"
)

var modelName = regexp.MustCompile(`(?m)^model name\s*:\s*(.+)$`)

// describeMachine says where the run happens: CPU, memory, kernel, the
// versions of Redis and k6, and the load average before bench started
// anything.
func describeMachine(ctx context.Context, cfg config) results.Machine {
	m := results.Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), LoadBefore: cpu.LoadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if mm := modelName.FindSubmatch(b); mm != nil {
			m.CPU = string(mm[1])
		}
	}
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) == nil {
		m.MemoryGiB = float64(si.Totalram) * float64(si.Unit) / (1 << 30)
	}
	m.Kernel = firstLine(ctx, "uname", "-r")
	m.Versions = []string{firstLine(ctx, "redis-server", "--version"), firstLine(ctx, cfg.K6, "version")}
	return m
}

// gitCommit returns the short HEAD of repo, with "+dirty" when the working
// tree has uncommitted changes (the run builds from the working tree).
func gitCommit(ctx context.Context, repo string) string {
	c := firstLine(ctx, "git", "-C", repo, "rev-parse", "--short", "HEAD")
	if st := firstLine(ctx, "git", "-C", repo, "status", "--porcelain", "--untracked-files=no"); st != "" {
		c += "+dirty"
	}
	return c
}

// firstLine is the first line of argv's output, or "<argv[0]>: unknown".
func firstLine(ctx context.Context, argv ...string) string {
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
	if err != nil {
		return argv[0] + ": unknown"
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}
