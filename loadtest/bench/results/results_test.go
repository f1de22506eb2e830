package results_test

import (
	"strings"
	"testing"

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

func TestTargets(t *testing.T) {
	t.Parallel()
	phase := func(accepted, replayed, p50 float64) results.Phase {
		return results.Phase{Accepted: accepted, Replayed: replayed, P50MS: p50}
	}
	alone := func(accepted, charged float64) *results.Alone {
		return &results.Alone{API: phase(accepted, 0, 0), Drain: results.Drain{Charged: charged}}
	}
	r := &results.Results{
		Settings: results.Settings{LatencyRate: 100},
		Go: &results.GoBench{Medians: map[string]results.GoMedian{
			"BeginComplete": {GoPoint: results.GoPoint{NsPerOp: 120000}},
			"RawEvalSha":    {GoPoint: results.GoPoint{NsPerOp: 100000}},
		}},
		Coloc: &results.Colocated{Runs: []results.ColocRun{{Ceiling: 1000}}},
		E2E: &results.E2E{
			OffHonoured: true,
			RoundTrips: results.RoundTrips{
				Fresh:  results.Commands{Requests: 10, Total: 20, ByCommand: map[string]int{"evalsha": 20}},
				Replay: results.Commands{Requests: 10, Total: 11, ByCommand: map[string]int{"evalsha": 10, "hello": 1}},
			},
			Saturation: []results.SatRound{
				{On: phase(90, 0, 0), Off: phase(100, 0, 0), Replay: phase(0, 900, 0),
					OnAlone: alone(180, 70), OffAlone: alone(200, 100)},
				{On: phase(80, 0, 0), Off: phase(100, 0, 0), Replay: phase(0, 300, 0)}, // a round without them
				{On: phase(95, 0, 0), Off: phase(100, 0, 0), Replay: phase(0, 600, 0),
					OnAlone: alone(190, 95), OffAlone: alone(200, 100)},
			},
			Latency:      []results.LatRound{{On: phase(100, 0, 3.4), Off: phase(100, 0, 3.0)}},
			Sustained:    []results.Sustained{{Rate: 600, OK: false}, {Rate: 400, OK: true}},
			SustainedOff: []results.Sustained{{Rate: 600, OK: true}, {Rate: 650, OK: false}},
		},
	}
	got := map[string]results.Target{}
	for _, tt := range r.Targets() {
		got[tt.Name] = tt
	}
	check := func(name string, value float64, met bool) {
		t.Helper()
		tt, ok := got[name]
		if !ok || !tt.Known {
			t.Errorf("%s: not evaluated", name)
			return
		}
		if d := tt.Value - value; d > 1e-9 || d < -1e-9 || tt.Met != met {
			t.Errorf("%s = %v (met %v), want %v (met %v)", name, tt.Value, tt.Met, value, met)
		}
	}
	check("boundary on vs off: throughput, the api alone", 0.925, true)      // rounds 1 and 3: 0.90, 0.95
	check("boundary on vs off: throughput, the workers alone", 0.825, false) // 0.70, 0.95
	check("boundary on vs off: throughput, both stages at once", 0.9, true)
	check("boundary on vs off: p50 overhead", 0.4, true)
	check("replay vs fresh throughput", 600.0/95, true) // the median of the per-round ratios 10, 3.75, 6.32
	check("sustained end to end vs colocated ceiling", 0.4, false)
	if m := got["sustained end to end vs colocated ceiling"].Measured; !strings.HasSuffix(m, "; boundary off: 600 held, 650 failed") {
		t.Errorf("sustained: measured %q does not name the boundary-off runs", m)
	}
	check("Redis round trips per new request / per replay", 2, true) // the handshake is not per request
	check("pkg/idem Begin+Complete vs two raw EVALSHA", 100000.0/120000, true)
}

func TestTargetsWithoutTheOffVariant(t *testing.T) {
	t.Parallel()
	r := &results.Results{E2E: &results.E2E{OffHonoured: false,
		Saturation: []results.SatRound{{On: results.Phase{Accepted: 1}, Off: results.Phase{Accepted: 1}}}}}
	for _, tt := range r.Targets() {
		if strings.HasPrefix(tt.Name, "boundary on vs off") && tt.Known {
			t.Errorf("on vs off evaluated although the off variant called Redis: %+v", tt)
		}
	}
}
