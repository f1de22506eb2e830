package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncepay/oncepay/loadtest/bench/cpu"
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

// TestReportExplainsUnmetCPUTarget: when 4b is not met, report.md breaks
// its CPU per payment down by process group, with the commits per
// payment; when it is met, it does not.
func TestReportExplainsUnmetCPUTarget(t *testing.T) {
	t.Parallel()
	run := func(busy float64) *results.Results {
		// 10 s, 1000 charged: 10 ms per core.
		usage := cpu.Usage{MachineBusy: busy, Cores: map[string]float64{"api": 0.06, "postgres": busy - 0.06 - 0.04, "psp": 0.04}}
		s := results.Sustained{Rate: 100, OK: true, Charged: 1000, PSPDB: 0.01, PGCommits: 4.07, Phase: results.Phase{CPU: usage}}
		return &results.Results{Settings: results.Settings{SustainSeconds: 10},
			E2E: &results.E2E{OffHonoured: true, Sustained: []results.Sustained{s}, SustainedOff: []results.Sustained{s}}}
	}
	var md strings.Builder
	report.Markdown(&md, run(0.4)) // 4.0 ms: not met
	for _, want := range []string{"### Where 4b's CPU goes",
		"| boundary on | 100 | the highest held | 4.00 | 4.07 | postgres 2.90, api 0.60, psp 0.40, psp's database 0.10 |",
		"| boundary off | 100 |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md.String())
		}
	}
	md.Reset()
	report.Markdown(&md, run(0.3)) // 3.0 ms: met
	if strings.Contains(md.String(), "Where 4b's CPU goes") {
		t.Errorf("report.md explains a met target:\n%s", md.String())
	}
}

// TestReportBreaksDownTarget1: report.md always shows where the latency
// rounds' time goes, and says where the overhead goes when target 1 is
// not met.
func TestReportBreaksDownTarget1(t *testing.T) {
	t.Parallel()
	run := func(offP50 float64) *results.Results {
		bd := &results.Breakdown{Begin: results.Timing{N: 500, P50MS: .2, MeanMS: .22}, Complete: results.Timing{N: 500, P50MS: .15, MeanMS: .16},
			FloorBegin: results.Timing{N: 2000, P50MS: .12, MeanMS: .13}, FloorComplete: results.Timing{N: 2000, P50MS: .1, MeanMS: .11},
			PacedBegin: results.Timing{N: 500, P50MS: .3, MeanMS: .31}, PacedComplete: results.Timing{N: 500, P50MS: .14, MeanMS: .15},
			ServerOn: results.Timing{N: 500, P50MS: 1.4, MeanMS: 1.5}, ServerOff: results.Timing{N: 500, P50MS: 1, MeanMS: 1.1}}
		return &results.Results{Settings: results.Settings{LatencyRate: 100}, E2E: &results.E2E{OffHonoured: true,
			Latency: []results.LatRound{{On: results.Phase{P50MS: 2.5}, Off: results.Phase{P50MS: offP50}, Floor: results.Floor{Ops: 2000, P50MS: .22}, Breakdown: bd}}}}
	}
	var md strings.Builder
	report.Markdown(&md, run(2.0)) // +0.50 ms over 0.22: not met
	for _, want := range []string{"### Where target 1's time goes",
		"| 1 | +0.500 | 1.400 (1.500) | 1.000 (1.100) | +0.400 | 0.200 (0.220) | 0.150 (0.160) | 0.120 (0.130) | 0.100 (0.110) | 0.300 (0.310) | 0.140 (0.150) |",
		"Where the overhead goes (the median round): of the +0.50 ms overhead the client saw, +0.40 ms is inside the api"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md.String())
		}
	}
	md.Reset()
	report.Markdown(&md, run(2.3)) // +0.20 ms: met
	if !strings.Contains(md.String(), "### Where target 1's time goes") || strings.Contains(md.String(), "Where the overhead goes") {
		t.Errorf("with target 1 met, report.md should show the table only:\n%s", md.String())
	}
}

func TestReportJudgesOverload(t *testing.T) {
	t.Parallel()
	r := &results.Results{Commit: "abc1234", Overload: &results.Overload{BaseRef: "main", BaseCommit: "c684600", Seconds: 60, Factors: []float64{2},
		Capacity: []results.OverloadPoint{{Copy: "new", Accepted: 400, Sent: 400, Goodput: 400, APIRSS: 60, WorkerRSS: 50},
			{Copy: "base", Accepted: 350, Sent: 350, Goodput: 350, APIRSS: 60, WorkerRSS: 50}},
		Steps: []results.OverloadPoint{
			{Copy: "new", Factor: 2, Offered: 800, Sent: 800, Accepted: 390, Goodput: 390, Refused: 410, RefusedP99: 9, APIRSS: 70, WorkerRSS: 50},
			{Copy: "base", Factor: 2, Offered: 800, Sent: 500, Accepted: 200, Goodput: 210, Refused: 20, RefusedP99: 520, TimedOut: 80, APIRSS: 200, WorkerRSS: 50},
		}}}
	dir := t.TempDir()
	if err := report.Write(r, dir, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Overload: new (abc1234) against base (main = c684600)",
		"| new | capacity | closed | 400 | 400 | 400 |",
		"| new | 2x | 800 | 800 | 390 | 390 | 410 | 9 | 0 | 0 | 0 | 70 | 50 | 0 | **met** (0.97x goodput) |",
		"| **not met**: goodput 0.60x; excess not refused fast; RSS api 3.33x, workers 1.00x |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "perf-overload.png")); err != nil || fi.Size() == 0 {
		t.Errorf("perf-overload.png: %v", err)
	}
}

// TestReportNamesThePatroniCopy: with BENCH_PG=patroni the second copy's
// rows say what it was, not "boundary off".
func TestReportNamesThePatroniCopy(t *testing.T) {
	t.Parallel()
	ph := results.Phase{P50MS: 3}
	r := &results.Results{Settings: results.Settings{Postgres: "patroni", LatencyRate: 100},
		E2E: &results.E2E{Latency: []results.LatRound{{On: ph, Off: ph}}}}
	var md strings.Builder
	report.Markdown(&md, r)
	if !strings.Contains(md.String(), "| 1 | boundary on, Postgres under Patroni (synchronous) |") || strings.Contains(md.String(), "boundary off") {
		t.Errorf("report.md does not name the Patroni copy:\n%s", md.String())
	}
}
