package results_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/oncepay/oncepay/loadtest/bench/cpu"
	"github.com/oncepay/oncepay/loadtest/bench/peer"
	"github.com/oncepay/oncepay/loadtest/bench/results"
)

func TestMedian(t *testing.T) {
	t.Parallel()
	tests := []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}}
	for _, tt := range tests {
		if got := results.Median(tt.xs); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.xs, got, tt.want)
		}
	}
}

// sample is a run with every target's data: the peer file, when given, is
// written to dir and read as the peer phase would leave it.
func sample(t *testing.T, peerJSON string) *results.Results {
	t.Helper()
	phase := func(accepted, replayed, p50 float64) results.Phase {
		return results.Phase{Accepted: accepted, Replayed: replayed, P50MS: p50}
	}
	// 10 s at 100/s charged 1000 payments; 0.45 cores of named processes
	// of which the psp 0.05 and its database 0.02: 4.5 ms, 3.8 without.
	usage := cpu.Usage{MachineBusy: 0.5, Others: 0.05, Cores: map[string]float64{"psp": 0.05}}
	r := &results.Results{
		Settings: results.Settings{LatencyRate: 100, SustainSeconds: 10},
		Go: &results.GoBench{Samples: map[string][]results.GoPoint{
			"BeginComplete": {{NsPerOp: 110000}, {NsPerOp: 130000}},
			"RawEvalSha":    {{NsPerOp: 100000}},
		}},
		E2E: &results.E2E{
			OffHonoured: true,
			RoundTrips: results.RoundTrips{
				Fresh:  results.Commands{Requests: 10, Total: 20, ByCommand: map[string]int{"evalsha": 20}},
				Replay: results.Commands{Requests: 10, Total: 11, ByCommand: map[string]int{"evalsha": 10, "hello": 1}},
			},
			Saturation: []results.SatRound{
				{On: phase(90, 0, 0), Replay: phase(0, 900, 0)},
				{On: phase(80, 0, 0), Replay: phase(0, 300, 0)},
				{On: phase(95, 0, 0), Replay: phase(0, 600, 0)},
			},
			Latency: []results.LatRound{
				{On: phase(100, 0, 1.4), Off: phase(100, 0, 1.0), Floor: results.Floor{P50MS: 0.2}},
				{On: phase(100, 0, 1.5), Off: phase(100, 0, 1.2), Floor: results.Floor{P50MS: 0.25}},
			},
			Sustained: []results.Sustained{{Rate: 600}, {Rate: 400, OK: true, Charged: 1000, PSPDB: 0.02,
				Phase: results.Phase{CPU: usage}}},
			SustainedOff: []results.Sustained{{Rate: 500, OK: true}, {Rate: 560}},
		},
	}
	if peerJSON != "" {
		path := filepath.Join(t.TempDir(), "peer.json")
		if err := os.WriteFile(path, []byte(peerJSON), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := peer.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		r.Peer = p
	}
	return r
}

func TestTargets(t *testing.T) {
	t.Parallel()
	r := sample(t, `{"summary": [
		{"lib": "idem", "op": "fresh", "concurrency": 64, "ops_per_s": 24000, "total_cpu_us_per_op": 40},
		{"lib": "idem-unbatched", "op": "fresh", "concurrency": 64, "ops_per_s": 1, "total_cpu_us_per_op": 1},
		{"lib": "powertools", "op": "fresh", "concurrency": 64, "ops_per_s": 20000, "total_cpu_us_per_op": 56},
		{"lib": "idem", "op": "replay", "concurrency": 64, "ops_per_s": 40000, "total_cpu_us_per_op": 40},
		{"lib": "powertools", "op": "replay", "concurrency": 64, "ops_per_s": 23000, "total_cpu_us_per_op": 49}]}`)
	got := map[string]results.Target{}
	for _, tt := range r.Targets() {
		got[tt.Name[:2]] = tt
	}
	tests := []struct {
		prefix string
		value  float64
		status string
	}{
		{"1.", 0.35 / 0.225, "not met"}, // overheads 0.4 and 0.3 ms over floors 0.2 and 0.25
		{"2.", 1.2, "met"},              // CPU 40/56 = 0.71x, ops 1.2x
		{"3.", 40000.0 / 23000, "not met"},
		{"4a", 0.8, "not met"}, // 400 held against 500
		{"4b", 4.5, "not met"},
		{"re", 600.0 / 95, "met"}, // the median of the per-round ratios 10, 3.75, 6.32
		{"Re", 2, "met"},          // the handshake is not per request
		{"pk", 100000.0 / 120000, "met"},
	}
	for _, tt := range tests {
		g, ok := got[tt.prefix]
		if !ok {
			t.Errorf("%s: no such target", tt.prefix)
			continue
		}
		if d := g.Value - tt.value; d > 1e-9 || d < -1e-9 || g.Status() != tt.status {
			t.Errorf("%s = %v (%s), want %v (%s)", g.Name, g.Value, g.Status(), tt.value, tt.status)
		}
	}
	if s := r.E2E.Sustained[1]; s.CPUPerCharged(10, true) < 3.8-1e-9 || s.CPUPerCharged(10, true) > 3.8+1e-9 {
		t.Errorf("CPU per charged payment without the psp = %v, want 3.8", s.CPUPerCharged(10, true))
	}
}

func TestTargetsNotRun(t *testing.T) {
	t.Parallel()
	r := sample(t, "")
	r.E2E.OffHonoured = false // the off copy still called Redis: no on/off comparison
	for _, tt := range r.Targets() {
		switch tt.Name[:2] {
		case "1.", "2.", "3.", "4a", "4b":
			if tt.Status() != "not run" {
				t.Errorf("%s: %s (%s), want not run", tt.Name, tt.Status(), tt.Measured)
			}
		}
	}
	if _, err := peer.Load(filepath.Join(t.TempDir(), "none.json")); !os.IsNotExist(err) {
		t.Errorf("peer.Load of a missing file: %v, want a not-exist error", err)
	}
}

func TestSustainedTargetsWhenARateDidNotHold(t *testing.T) {
	t.Parallel()
	held := func(rate float64, ok bool) results.Sustained {
		return results.Sustained{Rate: rate, OK: ok, Charged: 1000,
			Phase: results.Phase{CPU: cpu.Usage{MachineBusy: 0.3}}} // 3 ms per payment over 10 s
	}
	tests := []struct {
		name       string
		on, off    []results.Sustained
		sus, cpuMS string // statuses of 4a and 4b
	}{
		{"none held without the boundary", []results.Sustained{held(300, true)}, []results.Sustained{held(300, false)}, "met", "met"},
		{"none held at all", []results.Sustained{held(300, false), held(250, false)}, []results.Sustained{held(300, false)}, "not met", "met"},
	}
	for _, tt := range tests {
		r := sample(t, "")
		r.E2E.Sustained, r.E2E.SustainedOff = tt.on, tt.off
		got := map[string]string{}
		for _, tg := range r.Targets() {
			got[tg.Name[:2]] = tg.Status()
		}
		if got["4a"] != tt.sus || got["4b"] != tt.cpuMS {
			t.Errorf("%s: 4a %s, 4b %s; want %s, %s", tt.name, got["4a"], got["4b"], tt.sus, tt.cpuMS)
		}
	}
}

func TestLatencyTargetUsesPairedSlices(t *testing.T) {
	t.Parallel()
	r := sample(t, "")
	// The round's median slices differ by 0.9 ms, but the paired
	// differences are 0.1, 0.2 and 0.3 ms: the target reads the pairs.
	r.E2E.Latency = []results.LatRound{{
		On: results.Phase{P50MS: 2.0}, Off: results.Phase{P50MS: 1.1}, Floor: results.Floor{P50MS: 0.2},
		Pairs: []results.LatPair{{OnP50MS: 1.3, OffP50MS: 1.2}, {OnP50MS: 2.0, OffP50MS: 1.8}, {OnP50MS: 1.4, OffP50MS: 1.1}},
	}}
	for _, tt := range r.Targets() {
		if tt.Name[:2] == "1." && (tt.Value < 1-1e-9 || tt.Value > 1+1e-9 || tt.Status() != "met") {
			t.Errorf("%s = %v (%s), want 1 (met)", tt.Name, tt.Value, tt.Status())
		}
	}
}

func TestCosts(t *testing.T) {
	t.Parallel()
	// 10 s, 1000 charged: 10 ms per core. The postgres group holds the
	// psp's database backends (0.02 cores), reported apart.
	usage := cpu.Usage{MachineBusy: 0.5, Others: 0.05, Cores: map[string]float64{
		"api": 0.1, "worker": 0.1, "postgres": 0.15, "psp": 0.05, "k6": 0.05}}
	r := &results.Results{
		Settings: results.Settings{SustainSeconds: 10},
		E2E: &results.E2E{
			Sustained: []results.Sustained{{Rate: 600}, {Rate: 400, OK: true, Charged: 1000, PSPDB: 0.02, PGCommits: 4.1,
				Phase: results.Phase{CPU: usage}}},
		},
	}
	costs := r.Costs()
	if len(costs) != 1 {
		t.Fatalf("%d costs, want 1 (no runs without the boundary)", len(costs))
	}
	c := costs[0]
	if c.Copy != "boundary on" || c.Rate != 400 || c.Which != "the highest held" || c.PGCommits != 4.1 {
		t.Errorf("cost = %+v, want boundary on, 400/s, the highest held, 4.1 commits", c)
	}
	want := []results.GroupCost{{Name: "postgres", MS: 1.3}, {Name: "api", MS: 1}, {Name: "worker", MS: 1}, {Name: "k6", MS: 0.5}, {Name: "psp", MS: 0.5}, {Name: "psp's database", MS: 0.2}}
	sum := 0.0
	for i, g := range c.Groups {
		sum += g.MS
		if i >= len(want) || g.Name != want[i].Name || math.Abs(g.MS-want[i].MS) > 1e-9 {
			t.Errorf("groups = %v, want %v", c.Groups, want)
			break
		}
	}
	if math.Abs(sum-c.MS) > 1e-9 || math.Abs(c.MS-4.5) > 1e-9 {
		t.Errorf("groups add up to %v, total %v; want both 4.5", sum, c.MS)
	}
}
