package compare

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/history"
	"github.com/oncepay/oncepay/loadtest/record"
	"github.com/oncepay/oncepay/loadtest/verify"
)

func report(kinds ...string) verify.Report {
	r := verify.Report{RunID: "r1", Pass: len(kinds) == 0}
	r.Requests.ByOutcome = map[record.Outcome]int{record.OutcomeGaveUp: 2}
	r.Requests.CutOff = 5
	for _, k := range kinds {
		r.Violations = append(r.Violations, verify.Violation{Kind: k})
	}
	return r
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	r := report(verify.KindDoubleCharge, verify.KindDoubleCharge, verify.KindFailedCharged,
		verify.KindStuckPending, verify.KindAmountDiffers, verify.KindWrongPayment, verify.KindStaleBoundary, verify.KindChargeIDDiffers)
	r.Payments.DeadLettered = 3
	attempts := []record.Attempt{
		{Status: 202, PaymentID: "pay_1", DurationMS: 10},
		{Status: 202, PaymentID: "pay_1", DurationMS: 20, Replayed: true},
		{Status: 202, PaymentID: "pay_2", DurationMS: 30},
		{Status: 409, DurationMS: 5},
		{Status: 0, Class: record.ClassCutOff, DurationMS: 9000}, // no answer: not a latency
	}
	got := Summarize("get-then-set", r, attempts, 4, 2*time.Second)
	want := map[Column]int{DoubleCharges: 3, PaymentsLost: 1, MismatchedReplays: 2, StuckRecords: 1 + 3 + 4, Other: 1}
	if diff := cmp.Diff(want, got.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if got.Accepted != 2 || got.AcceptedPerSecond != 1 || got.P99 != 30*time.Millisecond || got.GaveUp != 2 || got.CutOff != 5 {
		t.Errorf("row = %+v", got)
	}
	if v := got.Verdict(); v != "CAUGHT: 15 violation(s)" {
		t.Errorf("verdict %q", v)
	}
	if k := got.KindsText(); !strings.HasPrefix(k, "double_charge 2, ") || !strings.HasSuffix(k, "dead-lettered 3, markers left 4") {
		t.Errorf("kinds text %q", k)
	}
}

func TestSummarizeHistories(t *testing.T) {
	t.Parallel()
	r := report(verify.KindDoubleCharge)
	r.Violations = append(r.Violations, verify.Violation{Invariant: 7, Kind: verify.KindNotLinearizable})
	r.History.Verdict, r.History.Partitions = history.VerdictIllegal, 40
	r.History.Violations = []history.Violation{{Key: "m:k", Verdict: history.VerdictIllegal}}
	got := Summarize("api-only", r, nil, 0, time.Second)
	if got.Histories != "ILLEGAL (1 of 40 keys)" || got.Violations() != 1 || got.Kinds[verify.KindNotLinearizable] != 1 {
		t.Errorf("row = %+v: want histories ILLEGAL (1 of 40 keys), 1 counted violation, the kind listed", got)
	}
	if v := got.Verdict(); v != "CAUGHT: 1 violation(s), 1 key histories" {
		t.Errorf("verdict %q", v)
	}
	only := report()
	only.Violations = []verify.Violation{{Invariant: 7, Kind: verify.KindNotLinearizable}}
	only.History.Verdict, only.History.Partitions = history.VerdictIllegal, 40
	only.History.Violations = []history.Violation{{Key: "m:k", Verdict: history.VerdictIllegal}}
	if v := Summarize("oncepay", only, nil, 0, time.Second).Verdict(); v != "CAUGHT: 1 key histories" {
		t.Errorf("verdict of a run failing invariant 7 only: %q, want it caught", v)
	}
	ok := report()
	ok.History.Verdict, ok.History.Partitions = history.VerdictOK, 40
	if got := Summarize("oncepay", ok, nil, 0, time.Second).Histories; got != "ok (40 keys)" {
		t.Errorf("histories of a clean run = %q", got)
	}
}

func TestVerdictNeverSaysSafe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		r    verify.Report
		want string
	}{
		{"clean run", report(), "not caught this run"},
		{"no fault landed", report(verify.KindNothingLanded), "run proved nothing: no fault landed"},
		{"caught, no fault landed", report(verify.KindNothingLanded, verify.KindDoubleCharge), "CAUGHT: 1 violation(s) (no fault landed)"},
	}
	for _, tt := range tests {
		if got := Summarize("s", tt.r, nil, 0, time.Second).Verdict(); got != tt.want {
			t.Errorf("%s: verdict %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestTables(t *testing.T) {
	t.Parallel()
	rows := []Row{
		Summarize("oncepay", report(), []record.Attempt{{Status: 202, PaymentID: "p", DurationMS: 12}}, 0, time.Second),
		Summarize("api-only", report(verify.KindDoubleCharge), nil, 0, time.Second),
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, rows); err != nil {
		t.Fatal(err)
	}
	want := "| strategy | boundary | psp key | double charges | payments lost | mismatched replays | stuck records | accepted/s | p99 | histories (7) | verdict |\n" +
		"|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n" +
		"| `oncepay` | oncepay | propagated | 0 | 0 | 0 | 0 | 1.0 | 12ms | - | not caught this run |\n" +
		"| `api-only` | oncepay in the api, none in the worker | fresh per attempt | 1 | 0 | 0 | 0 | 0.0 | 0s | - | CAUGHT: 1 violation(s) |\n"
	if diff := cmp.Diff(want, md.String()); diff != "" {
		t.Errorf("markdown (-want +got):\n%s", diff)
	}
	var text bytes.Buffer
	if err := WriteText(&text, rows); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(text.String()), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[2], "api-only  ") {
		t.Errorf("text table:\n%s", text.String())
	}
}

// TestContrasts: rows that differ in one variable are set side by side:
// a pattern against its +key variant (the psp key), a +key variant and
// off against oncepay (the boundary); rows that differ in two are not.
func TestContrasts(t *testing.T) {
	t.Parallel()
	rows := []Row{
		Summarize("oncepay", report(), nil, 0, time.Second),
		Summarize("get-then-set", report(verify.KindDoubleCharge, verify.KindDoubleCharge, verify.KindAmountDiffers), nil, 0, time.Second),
		Summarize("get-then-set+key", report(verify.KindAmountDiffers), nil, 0, time.Second),
		Summarize("api-only", report(verify.KindDoubleCharge), nil, 0, time.Second),
		Summarize("off", report(), nil, 0, time.Second),
	}
	var md bytes.Buffer
	if err := WriteContrasts(&md, rows); err != nil {
		t.Fatal(err)
	}
	want := "- psp key (fresh per attempt → propagated), `get-then-set` → `get-then-set+key`: " +
		"double charges 2 → 0, payments lost 0 → 0, mismatched replays 1 → 1, stuck records 0 → 0\n" +
		"- boundary (get-then-set → oncepay, same propagated key), `get-then-set+key` → `oncepay`: " +
		"double charges 0 → 0, payments lost 0 → 0, mismatched replays 1 → 0, stuck records 0 → 0\n" +
		"- boundary (none → oncepay, same propagated key), `off` → `oncepay`: " +
		"double charges 0 → 0, payments lost 0 → 0, mismatched replays 0 → 0, stuck records 0 → 0\n"
	if diff := cmp.Diff(want, md.String()); diff != "" {
		t.Errorf("contrasts (-want +got):\n%s", diff)
	}
}

func TestChart(t *testing.T) {
	t.Parallel()
	rows := []Row{
		Summarize("oncepay", report(), nil, 0, time.Second),
		Summarize("get-then-set", report(verify.KindDoubleCharge, verify.KindAmountDiffers), nil, 2, time.Second),
	}
	var png bytes.Buffer
	if err := Chart(&png, rows, "test", 600, 300); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png.Bytes(), []byte("\x89PNG")) {
		t.Errorf("not a PNG (%d bytes)", png.Len())
	}
}

// TestPostgresRows: the two Postgres rows run oncepay's own build on the
// ha topology under the lagged failover and differ in the replication
// only; the table shows them in a postgres column, an asynchronous row
// that lost acknowledged payments as CAUGHT in payments lost, and the
// replication as the variable between them.
func TestPostgresRows(t *testing.T) {
	t.Parallel()
	sync, ok := PostgresRow(PatroniSync)
	async, ok2 := PostgresRow(PatroniAsync)
	if !ok || !ok2 || !sync.Synchronous || async.Synchronous {
		t.Fatalf("PostgresRow: %+v %v, %+v %v", sync, ok, async, ok2)
	}
	if _, ok := PostgresRow("oncepay"); ok {
		t.Error("oncepay is a Postgres row")
	}
	if diff := cmp.Diff([]string{"kill-api", "failover-postgres-lagged"}, PostgresKinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	wantSync := []string{"TOPOLOGY=ha", "PATRONI_SYNCHRONOUS_MODE=true", "PATRONI_MAXIMUM_LAG_ON_FAILOVER=1073741824"}
	wantAsync := []string{"TOPOLOGY=ha", "PATRONI_SYNCHRONOUS_MODE=false", "PATRONI_MAXIMUM_LAG_ON_FAILOVER=1073741824"}
	if diff := cmp.Diff(wantSync, sync.Env()); diff != "" {
		t.Errorf("sync env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantAsync, async.Env()); diff != "" {
		t.Errorf("async env (-want +got):\n%s", diff)
	}

	lost := report(verify.KindLostPayment, verify.KindLostPayment, verify.KindStuckPending, verify.KindMismatchNoPayment)
	lost.Violations = append(lost.Violations, verify.Violation{Invariant: 7, Kind: verify.KindNotLinearizable},
		verify.Violation{Invariant: 7, Kind: verify.KindNotLinearizable})
	lost.History.Verdict, lost.History.Partitions = history.VerdictIllegal, 900
	lost.History.Violations = []history.Violation{{Key: "a"}, {Key: "b"}}
	rows := []Row{
		Summarize("oncepay", report(), nil, 0, time.Second),
		Summarize(PatroniSync, report(), nil, 0, time.Second),
		Summarize(PatroniAsync, lost, nil, 0, time.Second),
	}
	if got := rows[2].Counts[PaymentsLost]; got != 3 {
		t.Errorf("async payments lost = %d, want 3 (2 lost_payment, 1 stuck_pending)", got)
	}
	if v := rows[2].Verdict(); v != "CAUGHT: 4 violation(s), 2 key histories" {
		t.Errorf("async verdict %q", v)
	}
	if v := rows[1].Verdict(); v != "not caught this run" {
		t.Errorf("sync verdict %q", v)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, rows); err != nil {
		t.Fatal(err)
	}
	want := "| strategy | boundary | psp key | postgres | double charges | payments lost | mismatched replays | stuck records | other violations | accepted/s | p99 | histories (7) | verdict |\n" +
		"|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n" +
		"| `oncepay` | oncepay | propagated | runtime's | 0 | 0 | 0 | 0 | 0 | 0.0 | 0s | - | not caught this run |\n" +
		"| `patroni-sync` | oncepay | propagated | Patroni, synchronous | 0 | 0 | 0 | 0 | 0 | 0.0 | 0s | - | not caught this run |\n" +
		"| `patroni-async` | oncepay | propagated | Patroni, asynchronous | 0 | 3 | 0 | 0 | 1 | 0.0 | 0s | ILLEGAL (2 of 900 keys) | CAUGHT: 4 violation(s), 2 key histories |\n"
	if diff := cmp.Diff(want, md.String()); diff != "" {
		t.Errorf("markdown (-want +got):\n%s", diff)
	}
	var con bytes.Buffer
	if err := WriteContrasts(&con, rows); err != nil {
		t.Fatal(err)
	}
	wantCon := "- replication (asynchronous → synchronous, same lagged Postgres failover), `patroni-async` → `patroni-sync`: " +
		"double charges 0 → 0, payments lost 3 → 0, mismatched replays 0 → 0, stuck records 0 → 0, other violations 1 → 0\n"
	if diff := cmp.Diff(wantCon, con.String()); diff != "" {
		t.Errorf("contrasts (-want +got):\n%s", diff)
	}
}
