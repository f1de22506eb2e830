package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePGBench(t *testing.T) {
	t.Parallel()
	out := `pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: loadtest/bench/pgbench/api_insert.sql
number of transactions actually processed: 11904
number of failed transactions: 0 (0.000%)
number of transactions skipped: 12 (0.101%)
number of transactions above the 1000.0 ms latency limit: 3/11904 (0.025%)
latency average = 2.537 ms
rate limit schedule lag: avg 0.071 (max 7.234) ms
initial connection time = 14.753 ms
tps = 991.386662 (without initial connection time)
`
	got, err := parsePGBench(out)
	if err != nil {
		t.Fatal(err)
	}
	want := pgbenchResult{Processed: 11904, TPS: 991.386662, LatAvgMS: 2.537, LagAvgMS: 0.071, LagMaxMS: 7.234, Skipped: 12, Late: 3}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parsePGBench (-want +got):\n%s", diff)
	}
	if _, err := parsePGBench("connection refused"); err == nil {
		t.Error("parsePGBench without a tps line: no error")
	}
}

func TestParseRedisBenchmark(t *testing.T) {
	t.Parallel()
	out := `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"EVALSHA 63d1 1 idem:v1:{rbx:__rand_int__} api owner {"status":202,"body":"x"} 60000","112994.35","0.333","0.080","0.295","0.607","1.015","1.687"
`
	got, err := parseRedisBenchmark(out)
	if err != nil || got != 112994.35 {
		t.Errorf("parseRedisBenchmark = %v, %v; want 112994.35 (the rps column, despite commas in the title)", got, err)
	}
}

func TestParseCommandStats(t *testing.T) {
	t.Parallel()
	raw := "# Commandstats\r\n" +
		"cmdstat_evalsha:calls=4000,usec=9000,usec_per_call=2.25,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_hmget:calls=4000,usec=100,usec_per_call=0.03,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_hello:calls=2,usec=10,usec_per_call=5.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=1,usec=10,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_config|resetstat:calls=1,usec=10,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n"
	got := parseCommandStats(raw, map[string]bool{"hmget": true})
	if got.Total != 4002 {
		t.Errorf("Total = %d, want 4002 (evalsha + hello; hmget runs inside the scripts; info and resetstat are bench's own)", got.Total)
	}
	if diff := cmp.Diff(map[string]int{"evalsha": 4000, "hello": 2}, got.ByCommand); diff != "" {
		t.Errorf("ByCommand (-want +got):\n%s", diff)
	}
	got.Requests = 2000
	if got.PerRequest() != 2.001 || got.PerRequestWork() != 2 {
		t.Errorf("PerRequest = %v, PerRequestWork = %v; want 2.001 and 2", got.PerRequest(), got.PerRequestWork())
	}
}

func TestScriptCommands(t *testing.T) {
	t.Parallel()
	got, err := scriptCommands("../../../../lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"time", "hmget", "hset", "pttl", "pexpire", "hdel"} {
		if !got[name] {
			t.Errorf("the boundary's scripts call %s, scriptCommands did not find it: %v", name, got)
		}
	}
	if got["evalsha"] {
		t.Error("evalsha is a round trip, not a command the scripts call")
	}
}

func TestNextFraction(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		frac         float64
		ok           bool
		held, failed []float64
		want         float64
	}{
		{"target holds: try higher", 0.6, true, []float64{0.6}, nil, 0.7},
		{"target fails: try 0.4", 0.6, false, nil, []float64{0.6}, 0.4},
		{"0.4 holds below a failed 0.6: try 0.5", 0.4, true, []float64{0.4}, []float64{0.6}, 0.5},
		{"0.5 holds below a failed 0.6: halfway", 0.5, true, []float64{0.4, 0.5}, []float64{0.6}, 0.55},
		{"0.55 holds below a failed 0.6: stop", 0.55, true, []float64{0.4, 0.5, 0.55}, []float64{0.6}, 0},
		{"0.5 fails above a held 0.4: halfway", 0.5, false, []float64{0.4}, []float64{0.6, 0.5}, 0.45},
		{"0.45 holds below a failed 0.5: stop", 0.45, true, []float64{0.4, 0.45}, []float64{0.6, 0.5}, 0},
		{"0.45 fails above a held 0.4: stop", 0.45, false, []float64{0.4}, []float64{0.6, 0.5, 0.45}, 0},
		{"0.7 fails above a held 0.6: halfway", 0.7, false, []float64{0.6}, []float64{0.7}, 0.65},
		{"0.4 fails: go down", 0.4, false, nil, []float64{0.6, 0.4}, 0.3},
		{"0.3 holds below a failed 0.4: halfway", 0.3, true, []float64{0.3}, []float64{0.6, 0.4}, 0.35},
		{"0.2 fails: stop", 0.2, false, nil, []float64{0.6, 0.4, 0.3, 0.2}, 0},
	}
	for _, tt := range tests {
		got := nextFraction(tt.frac, tt.ok, tt.held, tt.failed)
		if d := got - tt.want; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: nextFraction(%v, %v) = %v, want %v", tt.name, tt.frac, tt.ok, got, tt.want)
		}
	}
}

func TestOffFraction(t *testing.T) {
	t.Parallel()
	onHeld, onFailed := []float64{0.4, 0.45}, []float64{0.6, 0.5}
	tests := []struct {
		name             string
		frac             float64
		ok               bool
		held, failed     []float64
		onHeld, onFailed []float64
		want             float64
	}{
		{"start at the target the on copy failed", 0, false, nil, nil, onHeld, onFailed, 0.6},
		{"start where the on copy failed above the target", 0, false, nil, nil, []float64{0.6}, []float64{0.7, 0.65}, 0.65},
		{"start above the on copy's best when it never failed", 0, false, nil, nil, []float64{0.6, 0.7}, nil, 0.75},
		{"no on runs: nothing to compare", 0, false, nil, nil, nil, nil, 0},
		{"holds: go up", 0.6, true, []float64{0.6}, nil, onHeld, onFailed, 0.65},
		{"holds again: go up", 0.65, true, []float64{0.6, 0.65}, nil, onHeld, onFailed, 0.7},
		{"fails above a held rate: stop", 0.7, false, []float64{0.6, 0.65}, []float64{0.7}, onHeld, onFailed, 0},
		{"fails: go down", 0.6, false, nil, []float64{0.6}, onHeld, onFailed, 0.55},
		{"holds below a failed rate: stop", 0.55, true, []float64{0.55}, []float64{0.6}, onHeld, onFailed, 0},
		{"fails down to the on copy's best", 0.5, false, nil, []float64{0.6, 0.55, 0.5}, onHeld, onFailed, 0.45},
		{"fails at the on copy's best: stop", 0.45, false, nil, []float64{0.6, 0.55, 0.5, 0.45}, onHeld, onFailed, 0},
		{"fails with no on rate held: go down", 0.6, false, nil, []float64{0.6}, nil, []float64{0.6, 0.4, 0.3, 0.2}, 0.55},
		{"never above the ceiling", 1, true, []float64{1}, nil, []float64{0.95}, nil, 0},
	}
	for _, tt := range tests {
		got := offFraction(tt.frac, tt.ok, tt.held, tt.failed, tt.onHeld, tt.onFailed)
		if d := got - tt.want; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: offFraction(%v, %v) = %v, want %v", tt.name, tt.frac, tt.ok, got, tt.want)
		}
	}
}

func TestWithDB(t *testing.T) {
	t.Parallel()
	got := withDB("postgres://oncepay:oncepay@127.0.0.1:5442/oncepay?sslmode=disable", "benchpg")
	if want := "postgres://oncepay:oncepay@127.0.0.1:5442/benchpg?sslmode=disable"; got != want {
		t.Errorf("withDB = %q, want %q", got, want)
	}
	if got, want := withRedisDB("redis://127.0.0.1:6392/0", 2), "redis://127.0.0.1:6392/2"; got != want {
		t.Errorf("withRedisDB = %q, want %q", got, want)
	}
}

func TestAutovacuumedSince(t *testing.T) {
	t.Parallel()
	before := map[string]int{"bench.payments": 2, "bench.outbox": 1, "benchpsp.psp_calls": 0}
	after := map[string]int{"bench.payments": 3, "bench.outbox": 1, "benchpsp.psp_calls": 1, "bench.charge_takeovers": 0}
	got := autovacuumedSince(before, after)
	if diff := cmp.Diff([]string{"bench.payments", "benchpsp.psp_calls"}, got); diff != "" {
		t.Errorf("autovacuumedSince (-want +got):\n%s", diff)
	}
}
