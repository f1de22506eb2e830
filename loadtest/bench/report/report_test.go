package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncepay/oncepay/loadtest/bench/report"
	"github.com/oncepay/oncepay/loadtest/bench/results"
)

func TestWriteRendersTablesAndPlots(t *testing.T) {
	t.Parallel()
	r := &results.Results{
		Machine:  results.Machine{Cores: 2},
		Settings: results.Settings{LatencyRate: 100, SustainSeconds: 20},
		Go:       &results.GoBench{Runs: 6, Samples: map[string][]results.GoPoint{"BeginComplete": {{NsPerOp: 1e5}}}},
		E2E: &results.E2E{OffHonoured: true, RewriteSeconds: 21,
			Saturation: []results.SatRound{{On: results.Phase{Accepted: 300}, Off: results.Phase{Accepted: 330}, Replay: results.Phase{Replayed: 3000}}},
			Latency: []results.LatRound{{On: results.Phase{P50MS: 1.1}, Off: results.Phase{P50MS: 0.9},
				Floor: results.Floor{Ops: 500, P50MS: 0.21, P99MS: 0.5}}},
			Sustained: []results.Sustained{{Rate: 450, OK: true, Pending: []float64{1, 2, 3, 4}, Phase: results.Phase{AOFRewrites: 1},
				RedisBytesPerPayment: 1003.6, Autovacuumed: []string{"bench.payments"}}},
			SustainedOff: []results.Sustained{{Rate: 500, OK: true, Pending: []float64{0, 1}}},
		},
	}
	dir := t.TempDir()
	var out bytes.Buffer
	if err := report.Write(r, dir, &out); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Targets", "| 0.95x (+0.20 ms overhead at 100/s, median of 1 paired slices, vs 0.21 ms floor) | **met** |",
		"| 0.90x (450 vs 500 payments/s held) | **met** |", "**not run** |",
		"| 1 | 500 | 0.210 | 0.500 | +0.200 |", "| 1004 | 1 | bench.payments |",
		"### Sustained end to end, boundary off", "AOF was rewritten (BGREWRITEAOF, waited for) before every side-by-side phase"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if !strings.Contains(out.String(), "| **not run** |") {
		t.Errorf("the targets printed lack the peer's, not run:\n%s", out.String())
	}
	for _, png := range []string{"perf-e2e.png", "perf-sustained.png"} {
		if fi, err := os.Stat(filepath.Join(dir, png)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", png, err)
		}
	}
}
