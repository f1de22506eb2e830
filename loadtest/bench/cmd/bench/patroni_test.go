package main

import (
	"slices"
	"testing"
	"time"
)

// TestConfigBenchPG: BENCH_PG is empty (the harness's one node) or
// patroni, whose cluster's ports follow BENCH_PORT_BASE unless
// BENCH_PATRONI_PORT_BASE sets them.
func TestConfigBenchPG(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pg, base, patroniBase string
		ok                    bool
		wantBase              int
	}{
		{"", "", "", true, 9240},
		{"patroni", "", "", true, 9240},
		{"patroni", "9300", "", true, 9360},
		{"patroni", "", "8620", true, 8620},
		{"citus", "", "", false, 0},
	} {
		env := map[string]string{"REDIS_URL": "redis://x", "DATABASE_URL": "postgres://x/y", "AMQP_URL": "amqp://x",
			"BENCH_PG": tc.pg, "BENCH_PORT_BASE": tc.base, "BENCH_PATRONI_PORT_BASE": tc.patroniBase}
		c, err := loadConfig(func(k string) string { return env[k] }, time.Now())
		if (err == nil) != tc.ok {
			t.Errorf("BENCH_PG=%q: error %v, want ok %v", tc.pg, err, tc.ok)
			continue
		}
		if tc.ok && (c.Postgres != tc.pg || c.PatroniPortBase != tc.wantBase) {
			t.Errorf("BENCH_PG=%q BENCH_PORT_BASE=%q BENCH_PATRONI_PORT_BASE=%q: postgres %q, Patroni ports from %d, want %d",
				tc.pg, tc.base, tc.patroniBase, c.Postgres, c.PatroniPortBase, tc.wantBase)
		}
	}
}

// TestPatroniVariant: with BENCH_PG=patroni the second copy differs from
// the first in its Postgres only: the boundary on, the production build,
// its own exchange and queue and ports, apart from the cluster's.
func TestPatroniVariant(t *testing.T) {
	t.Parallel()
	const base = 9180
	on, off := newVariants(base)
	p := patroniVariant(base, "postgres://oncepay:oncepay@127.0.0.1:9240,127.0.0.1:9241/oncepay")
	if p.Strategy != on.Strategy || p.Build != on.Build || p.DatabaseURL == "" || on.DatabaseURL != "" {
		t.Errorf("patroni copy %+v against %+v: want the boundary on, the same build, its own Postgres", p, on)
	}
	if !slices.Equal(p.APIs, off.APIs) || !slices.Equal(p.Workers, off.Workers) || p.Exchange == on.Exchange || p.Queue == on.Queue {
		t.Errorf("patroni copy %+v: want the off copy's ports and its own exchange and queue", p)
	}
	for _, port := range append(slices.Clone(p.APIs), p.Workers...) {
		for _, q := range []int{port, port + 20, port + 40} { // service, ops, pprof
			if q >= base+60 && q < base+60+18 {
				t.Errorf("port %d is in the cluster's range", q)
			}
		}
	}
}
