package main

import (
	"slices"
	"testing"
	"time"
)

func TestParseVmRSS(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, status string
		want         float64
	}{
		{"a process", "Name:\tapi\nVmPeak:\t 900000 kB\nVmRSS:\t   65536 kB\nRssAnon:\t 1 kB\n", 64},
		{"a kernel thread", "Name:\tkthreadd\nState:\tS\n", 0},
		{"garbled", "VmRSS:\tlots kB\n", 0},
	} {
		if got := parseVmRSS(tc.status); got != tc.want {
			t.Errorf("%s: parseVmRSS = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestOverloadVariantsStayOffTheE2EPorts(t *testing.T) {
	t.Parallel()
	const base = 9180
	on, off := newVariants(base)
	used := map[int]string{base + 9: "psp", base + 29: "psp"}
	for _, v := range append([]*variant{on, off}, overloadVariants(base)...) {
		for _, port := range append(slices.Clone(v.APIs), v.Workers...) {
			for _, p := range []int{port, port + 20} {
				if other, ok := used[p]; ok {
					t.Errorf("port %d: %s and %s", p, other, v.Name)
				}
				used[p] = v.Name
			}
		}
	}
}

func TestConfigOverloadPhase(t *testing.T) {
	t.Parallel()
	env := map[string]string{"REDIS_URL": "redis://x", "DATABASE_URL": "postgres://x/y", "AMQP_URL": "amqp://x",
		"BENCH_PHASES": "overload", "BENCH_BASE": "c684600", "BENCH_OVERLOAD_SECONDS": "30"}
	c, err := loadConfig(func(k string) string { return env[k] }, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !c.Phases["overload"] || c.Phases["e2e"] || c.Base != "c684600" || c.OverloadSeconds != 30 || !slices.Equal(c.OverloadFactors, []float64{1.5, 2}) {
		t.Errorf("config = phases %v, base %q, %d s, factors %v", c.Phases, c.Base, c.OverloadSeconds, c.OverloadFactors)
	}
	env["BENCH_PHASES"] = "overlaod"
	if _, err := loadConfig(func(k string) string { return env[k] }, time.Now()); err == nil {
		t.Error("BENCH_PHASES=overlaod: no error")
	}
}

func TestLoadCPUs(t *testing.T) {
	t.Parallel()
	env := map[string]string{"REDIS_URL": "redis://x", "DATABASE_URL": "postgres://x/y", "AMQP_URL": "amqp://x"}
	for _, tc := range []struct {
		cpus string
		ok   bool
		argv []string
	}{
		{"", true, []string{"k6", "run"}},
		{"1", true, []string{"taskset", "--cpu-list", "1", "k6", "run"}},
		{"2-3,5", true, []string{"taskset", "--cpu-list", "2-3,5", "k6", "run"}},
		{"last", false, nil},
		{"1;rm", false, nil},
	} {
		env["BENCH_LOAD_CPUS"] = tc.cpus
		c, err := loadConfig(func(k string) string { return env[k] }, time.Now())
		if (err == nil) != tc.ok {
			t.Errorf("BENCH_LOAD_CPUS=%q: error %v, want ok=%v", tc.cpus, err, tc.ok)
			continue
		}
		if !tc.ok {
			continue
		}
		b := &bench{cfg: c}
		if got := b.onLoadCPUs([]string{"k6", "run"}); !slices.Equal(got, tc.argv) {
			t.Errorf("BENCH_LOAD_CPUS=%q: argv %q, want %q", tc.cpus, got, tc.argv)
		}
	}
}
