package peer

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseInfo(t *testing.T) {
	info := "# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\nused_cpu_sys_children:9.000000\r\n" +
		"# Commandstats\r\ncmdstat_evalsha:calls=10,usec=50,usec_per_call=5.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_hset:calls=20,usec=10,usec_per_call=0.50,rejected_calls=0,failed_calls=0\r\n"
	got, err := parseInfo(info)
	if err != nil {
		t.Fatal(err)
	}
	if got.cpu != 3.75 {
		t.Errorf("cpu = %v, want 3.75 (children excluded)", got.cpu)
	}
	if diff := cmp.Diff(map[string]int64{"evalsha": 10, "hset": 20}, got.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if _, err := parseInfo("# CPU\r\n"); err == nil {
		t.Error("no cpu lines: want an error")
	}
}

func TestDerive(t *testing.T) {
	c := Cell{
		Client:    ClientResult{Ops: 1000, Seconds: 0.5, CPUs: 0.02},
		RedisCPUs: 0.01,
		Calls:     map[string]int64{"evalsha": 2000, "hset": 2000, "time": 1000},
	}
	got := derive(c)
	want := Metrics{OpsPerSec: 2000, ClientCPUus: 20, RedisCPUus: 10, TotalCPUus: 30, RedisCmds: 5, RedisRequests: 2}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" {
		t.Errorf("derive (-want +got):\n%s", diff)
	}
}

func TestTargets(t *testing.T) {
	sum := []Summary{
		{Lib: LibIdem, Op: OpFresh, Concurrency: 64, Metrics: Metrics{OpsPerSec: 30, TotalCPUus: 40}},
		{Lib: LibPeer, Op: OpFresh, Concurrency: 64, Metrics: Metrics{OpsPerSec: 20, TotalCPUus: 60}},
		{Lib: LibIdem, Op: OpReplay, Concurrency: 64, Metrics: Metrics{OpsPerSec: 30, TotalCPUus: 40}},
		{Lib: LibPeer, Op: OpReplay, Concurrency: 64, Metrics: Metrics{OpsPerSec: 20, TotalCPUus: 60}},
	}
	got := map[string]bool{}
	for _, tg := range targets(sum) {
		got[tg.Name] = tg.Met
	}
	want := map[string]bool{
		"fresh c=64 CPU/op": true, "fresh c=64 ops/s": true, // 0.67 ≤ 0.8, 1.5 ≥ 1.2
		"replay c=64 ops/s": false, "replay c=64 CPU/op": false, // 1.5 < 2, 0.67 > 0.6
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("targets met (-want +got):\n%s", diff)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
