package report_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncepay/oncepay/loadtest/bench/report"
	"github.com/oncepay/oncepay/loadtest/bench/results"
)

func TestWriteRendersTablesAndPlots(t *testing.T) {
	t.Parallel()
	stage := func(a float64) results.Stage { return results.Stage{Achieved: a, KeptUp: true, LagMS: 5, P99MS: 9} }
	step := func(x float64) results.ColocStep {
		return results.ColocStep{Rate: x, KeptUp: true, Stages: map[string]results.Stage{
			"http": stage(x), "redis": stage(x), "pg_insert": stage(x), "pg_update": stage(x), "amqp": stage(x)}}
	}
	r := &results.Results{
		Machine: results.Machine{Cores: 2},
		Go: &results.GoBench{Runs: 6, Medians: map[string]results.GoMedian{"BeginComplete": {GoPoint: results.GoPoint{NsPerOp: 1e5}}},
			Samples: map[string][]results.GoPoint{"BeginComplete": {{NsPerOp: 1e5}}}},
		Ceilings: &results.Ceilings{RedisBegin: []float64{4e4}, RedisComplete: []float64{6e4}, PGInsert: []float64{8e3}, PGUpdate: []float64{1e4}},
		Coloc:    &results.Colocated{Runs: []results.ColocRun{{Ceiling: 750, Knee: 1000, Steps: []results.ColocStep{step(500), step(750)}}}},
		E2E: &results.E2E{OffHonoured: true, VacuumSeconds: 17, RewriteSeconds: 21,
			Saturation: []results.SatRound{{On: results.Phase{Accepted: 300}, Off: results.Phase{Accepted: 330}, Replay: results.Phase{Replayed: 3000},
				OnAlone:  &results.Alone{API: results.Phase{Accepted: 450}, Drain: results.Drain{Backlog: 5400, Charged: 380}},
				OffAlone: &results.Alone{API: results.Phase{Accepted: 500}, Drain: results.Drain{Backlog: 6000, Charged: 400}}}},
			Sustained: []results.Sustained{{Rate: 450, Pending: []float64{1, 2, 3, 4}, SampleEvery: 1,
				Rewriting: []bool{false, true, true, false}, Phase: results.Phase{AOFRewrites: 1},
				RedisBytesPerPayment: 1003.6, RecordEncoding: "listpack",
				Vacuuming: []bool{true, true, true, false}, Autovacuumed: []string{"bench.payments"}}},
			SustainedOff: []results.Sustained{{Rate: 500, OK: true, Pending: []float64{0, 1}, SampleEvery: 1}},
		},
	}
	dir := t.TempDir()
	if err := report.Write(r, dir, io.Discard); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Targets", "Colocated ceiling: median 750", "| 0.91x (300 vs 330 payments/s accepted) |", "| 0.90x (450 vs 500 payments/s accepted) |",
		"| 0.95x (380 vs 400 payments/s charged) |", "| 1 | workers alone, boundary off | 400 | | 6000 |", "EVALSHA begin.lua",
		"| 1004 (listpack) | 1 (2) | 3 (bench.payments) |", "### Sustained end to end, boundary off", "| 500 | 0.0 |", "VACUUM (ANALYZE) of the end-to-end tables ran before every side-by-side phase (not the sustained runs), 17 s", "AOF was rewritten (BGREWRITEAOF, waited for) before every side-by-side phase (not the sustained runs), 21 s"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, png := range []string{"perf-colocated.png", "perf-e2e.png", "perf-sustained.png"} {
		if fi, err := os.Stat(filepath.Join(dir, png)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", png, err)
		}
	}
}
