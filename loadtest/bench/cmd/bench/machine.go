package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/cpu"
	"github.com/oncepay/oncepay/loadtest/bench/results"
)

func describeMachine(ctx context.Context, cfg config) results.Machine {
	m := results.Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), LoadBefore: cpu.LoadAvg()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				m.MemoryGiB = kb / (1 << 20)
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	version := func(argv ...string) string {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
		if err != nil {
			return argv[0] + ": unknown"
		}
		return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	}
	m.Versions = []string{
		version("redis-server", "--version"),
		version(cfg.K6, "version"),
	}
	return m
}

// gitCommit returns the short HEAD of repo, with "+dirty" when the working
// tree has uncommitted changes (the run builds from the working tree).
func gitCommit(ctx context.Context, repo string) string {
	head, err := exec.CommandContext(ctx, "git", "-C", repo, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(head))
	if st, err := exec.CommandContext(ctx, "git", "-C", repo, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		c += "+dirty"
	}
	return c
}
