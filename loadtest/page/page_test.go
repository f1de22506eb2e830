package page_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/page"
	"github.com/oncepay/oncepay/loadtest/record"
	"github.com/oncepay/oncepay/loadtest/verify"
)

var t0 = time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)

// ms is t0 plus n milliseconds, as k6 records times.
func ms(n float64) float64 { return float64(t0.UnixMilli()) + n }

// run is a small checked run: two keys, a kill of api-1 at t+1s that cut
// the first key's attempt off, a worker's lease taken over and a quiet key.
func run(t *testing.T) (verify.Report, verify.Snapshot) {
	t.Helper()
	mid := true
	s := verify.Snapshot{
		RunID: "r1", ExpectFaults: true,
		Attempts: []record.Attempt{
			{Kind: "attempt", TS: ms(10), End: ms(20), Scenario: "steady", Merchant: "m", Key: "r1-quiet", Amount: 5, Fingerprint: "fq", N: 1, Target: "127.0.0.1:8080", Status: 202, Class: record.ClassOK, PaymentID: "pay_q", Final: true, Outcome: record.OutcomeOK},
			{Kind: "attempt", TS: ms(990), End: ms(1010), Scenario: "steady", Merchant: "m", Key: "r1-hit", Amount: 7, Fingerprint: "fh", N: 1, Target: "127.0.0.1:8080", Class: record.ClassCutOff, ErrorCode: 1000, Error: "EOF"},
			{Kind: "attempt", TS: ms(1200), End: ms(1230), Scenario: "steady", Merchant: "m", Key: "r1-hit", Amount: 7, Fingerprint: "fh", N: 2, Target: "127.0.0.1:8082", Status: 202, Class: record.ClassOK, PaymentID: "pay_h", Final: true, Outcome: record.OutcomeOK},
		},
		Payments: []verify.Payment{
			{ID: "pay_q", Merchant: "m", Key: "r1-quiet", Amount: 5, Fingerprint: "fq", Currency: "EUR", Status: "succeeded", PSPChargeID: "ch_q", CreatedAt: t0.Add(15 * time.Millisecond), UpdatedAt: t0.Add(100 * time.Millisecond)},
			{ID: "pay_h", Merchant: "m", Key: "r1-hit", Amount: 7, Fingerprint: "fh", Currency: "EUR", Status: "succeeded", PSPChargeID: "ch_h", CreatedAt: t0.Add(1000 * time.Millisecond), UpdatedAt: t0.Add(20 * time.Second)},
		},
		Charges: []verify.Charge{
			{ID: "ch_q", IdempotencyKey: "m:r1-quiet", Reference: "pay_q", Amount: 5, Currency: "EUR", CreatedAt: t0.Add(50 * time.Millisecond)},
			{ID: "ch_h", IdempotencyKey: "m:r1-hit", Reference: "pay_h", Amount: 7, Currency: "EUR", CreatedAt: t0.Add(10 * time.Second)},
		},
		Outbox: []verify.OutboxRow{{ID: 2, PaymentID: "pay_q", Published: true, CreatedAt: t0.Add(15 * time.Millisecond), PublishedAt: t0.Add(20 * time.Millisecond), Attempts: 1},
			{ID: 1, PaymentID: "pay_h", Published: true, CreatedAt: t0.Add(time.Second), PublishedAt: t0.Add(1100 * time.Millisecond), Attempts: 1}},
		Takeovers:  []verify.Takeover{{PaymentID: "pay_h", Attempt: 2, Worker: "worker-2", TakenAt: t0.Add(18 * time.Second)}},
		PSPCallLog: []verify.PSPCall{{ReceivedAt: t0.Add(19 * time.Second), IdempotencyKey: "m:r1-hit", Reference: "pay_h", Amount: 7, Outcome: "replayed", ChargeID: "ch_h", HTTPStatus: 201}},
		Faults:     []fault.Event{{Seq: 1, Time: t0.Add(time.Second), Kind: "kill-api", Action: fault.ActionKill, Target: "api-1", PID: 42, MidRequest: &mid, InFlight: 1, Frozen: true}},
	}
	s.Drain.Complete = true
	return verify.Check(s), s
}

func TestBuild(t *testing.T) {
	r, s := run(t)
	logs := []page.LogLine{{Time: t0.Add(18 * time.Second), Level: "WARN", Msg: "took over an expired lease", Service: "worker", Instance: "worker-2", MerchantID: "m", Key: "r1-hit", PaymentID: "pay_h", Attempt: 2, Redelivered: true}}
	d := page.Build(r, s, logs, page.Options{MaxStories: 1})

	if d.StoriesTotal != 2 || d.Omitted != 1 || len(d.Stories) != 1 {
		t.Fatalf("stories: total %d, omitted %d, on the page %d; want 2, 1, 1", d.StoriesTotal, d.Omitted, len(d.Stories))
	}
	st := d.Stories[0]
	if st.ID != "m:r1-hit" || !cmp.Equal(st.Faults, []int{1}) {
		t.Errorf("first story %s hit by %v, want m:r1-hit hit by fault 1", st.ID, st.Faults)
	}
	var srcs []string
	for i, e := range st.Events {
		if i > 0 && e.AtMS < st.Events[i-1].AtMS {
			t.Errorf("event %d at %d ms before event %d at %d ms", i, e.AtMS, i-1, st.Events[i-1].AtMS)
		}
		srcs = append(srcs, e.Src)
	}
	want := []string{"client", "db", "outbox", "fault", "outbox", "client", "boundary", "worker", "psp", "db"}
	if diff := cmp.Diff(want, srcs); diff != "" {
		t.Errorf("story events by source (-want +got):\n%s\n%+v", diff, st.Events)
	}
	for _, tag := range []string{"cut off", "takeover", "psp replay", "redelivered", "worker retry"} {
		if !strings.Contains(strings.Join(st.Tags, ","), tag) {
			t.Errorf("story tags %v lack %q", st.Tags, tag)
		}
	}
	if len(d.Faults) != 1 || !cmp.Equal(d.Faults[0].Stories, []string{"m:r1-hit"}) || d.Faults[0].CutOff != 1 || d.Faults[0].Takeovers != 1 {
		t.Errorf("fault: %+v, want it to hit m:r1-hit with 1 cut-off and 1 takeover", d.Faults)
	}
	if len(d.Invariants) != 8 || d.Verdict != "PASS" {
		t.Errorf("%d invariants, verdict %s; want 8, PASS (violations %+v)", len(d.Invariants), d.Verdict, r.Violations)
	}
}

func TestViolationStoriesComeFirst(t *testing.T) {
	_, s := run(t)
	s.Payments[0].Status = "pending" // r1-quiet: stuck yet charged, violating 3 and 4
	r := verify.Check(s)
	d := page.Build(r, s, nil, page.Options{})
	if d.Stories[0].ID != "m:r1-quiet" || !cmp.Equal(d.Stories[0].Violated, []int{3, 4}) {
		t.Errorf("first story %s violates %v, want m:r1-quiet violating 3 and 4", d.Stories[0].ID, d.Stories[0].Violated)
	}
	if d.Pass || d.Invariants[3].OK {
		t.Errorf("verdict %s, invariant 4 ok %t; want a failure of 4", d.Verdict, d.Invariants[3].OK)
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	r, s := run(t)
	d := page.Build(r, s, nil, page.Options{Links: []page.Link{{Name: "k6's report", Href: "k6-report.html"}}})
	d.Stories[0].Events[0].Text = `</script><script>alert(1)</script>`
	path := filepath.Join(t.TempDir(), "report.html")
	if err := page.WriteFile(path, d); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("</script>")); n != 2 {
		t.Errorf("the page has %d </script>, want 2 (the data's and the script's)", n)
	}
	for _, fetch := range []string{`src="http`, `href="http`, "url(", "@import", "fetch(", "XMLHttpRequest"} {
		if bytes.Contains(b, []byte(fetch)) {
			t.Errorf("the page fetches from the network: it holds %q", fetch)
		}
	}
	got, err := page.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d, got); diff != "" {
		t.Errorf("read back (-wrote +read):\n%s", diff)
	}
}

func TestReadLogs(t *testing.T) {
	dir := t.TempDir()
	lines := `not json
{"time":"2026-11-26T05:00:02Z","level":"INFO","msg":"request","service":"api","instance":"api-1","status":202,"merchant":"m","idempotency_key":"r1-a"}
{"time":"2026-11-26T05:00:01Z","level":"INFO","msg":"payment settled","service":"worker","merchant_id":"m","idempotency_key":"r1-b","attempt":1,"status":"succeeded"}
{"time":"2026-11-26T05:00:03Z","level":"INFO","msg":"request","service":"api","merchant":"m","idempotency_key":"r10-a"}
{"time":"2026-11-26T05:00:04Z","level":"INFO","msg":"started","service":"api"}
`
	if err := os.WriteFile(filepath.Join(dir, "api-1.log"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := page.ReadLogs([]string{filepath.Join(dir, "*.log"), filepath.Join(dir, "none", "*.log")}, "r1")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, l := range got {
		keys = append(keys, l.Key)
	}
	if want := []string{"r1-b", "r1-a"}; !cmp.Equal(keys, want) {
		t.Errorf("keys read %v, want %v (the run's, in time order)", keys, want)
	}
}

// TestDoubleChargeAfterALostAnswer: a charge whose answer was lost
// (fail_after) and a second charge of the same payment mark the story.
func TestDoubleChargeAfterALostAnswer(t *testing.T) {
	_, s := run(t)
	s.PSPCallLog = []verify.PSPCall{
		{ReceivedAt: t0.Add(2 * time.Second), IdempotencyKey: "m:r1-hit:attempt-1", Reference: "pay_h", Amount: 7, Outcome: "fail_after", ChargeID: "ch_1"},
		{ReceivedAt: t0.Add(3 * time.Second), IdempotencyKey: "m:r1-hit:attempt-2", Reference: "pay_h", Amount: 7, Outcome: "charged", ChargeID: "ch_2", HTTPStatus: 201},
	}
	d := page.Build(verify.Check(s), s, nil, page.Options{})
	if st := d.Stories[0]; st.ID != "m:r1-hit" || !strings.Contains(strings.Join(st.Tags, ","), "double charge") {
		t.Errorf("first story %s tagged %v, want m:r1-hit tagged double charge", st.ID, st.Tags)
	}
}

// TestTakeoverFollowsTheWorkerFault: a takeover counts against the kill of
// a worker whose lease ran out, not a later fault of Redis.
func TestTakeoverFollowsTheWorkerFault(t *testing.T) {
	_, s := run(t)
	s.Faults = []fault.Event{
		{Seq: 1, Time: t0.Add(3 * time.Second), Kind: "kill-worker", Action: fault.ActionKill, Target: "worker-1"},
		{Seq: 2, Time: t0.Add(10 * time.Second), Kind: "restart-redis", Action: fault.ActionRestart, Target: "redis", TookMS: 800},
	}
	r := verify.Check(s)
	d := page.Build(r, s, nil, page.Options{})
	for _, st := range d.Stories {
		if st.ID == "m:r1-hit" && !cmp.Equal(st.Faults, []int{1}) {
			t.Errorf("the takeover of m:r1-hit counts against faults %v, want [1] (the worker's kill)", st.Faults)
		}
	}
}

// TestDirectHitsBeforeHeldMessages: under the cap, a payment a fault hit
// in flight stays on the page before one whose message a broker restart
// only held up in the outbox.
func TestDirectHitsBeforeHeldMessages(t *testing.T) {
	_, s := run(t)
	s.Outbox[0].Attempts = 3 // pay_q's row, created at t+15ms, published after retries
	s.Faults = append([]fault.Event{{Seq: 2, Time: t0, Kind: "restart-rabbitmq", Action: fault.ActionRestart, Target: "rabbitmq", TookMS: 500}}, s.Faults...)
	d := page.Build(verify.Check(s), s, nil, page.Options{MaxStories: 1})
	if got := d.Stories[0].ID; got != "m:r1-hit" {
		t.Errorf("the page keeps %s, want m:r1-hit (cut off by the kill)", got)
	}
}

// TestServerErrorIsAHit: a 500 answered while Postgres was down counts as
// hit by the fault.
func TestServerErrorIsAHit(t *testing.T) {
	_, s := run(t)
	s.Attempts[1].Class, s.Attempts[1].Status, s.Attempts[1].Error = record.ClassServerError, 500, ""
	s.Faults[0].Target, s.Faults[0].Kind = "postgres", "kill-postgres"
	s.Takeovers = nil
	d := page.Build(verify.Check(s), s, nil, page.Options{})
	if got := d.Faults[0].Stories; !cmp.Equal(got, []string{"m:r1-hit"}) {
		t.Errorf("kill-postgres hit %v, want [m:r1-hit] (answered 500)", got)
	}
}

// TestWorkerPauseHitsNoClient: a request cut off while a worker was paused
// counts against the kill of the api replica it was sent to, not the later
// pause, which a client cannot see.
func TestWorkerPauseHitsNoClient(t *testing.T) {
	_, s := run(t)
	s.Faults = append(s.Faults, fault.Event{Seq: 2, Time: t0.Add(1005 * time.Millisecond), Kind: "pause-worker", Action: fault.ActionPause, Target: "worker-1", ForMS: 35000, TookMS: 35000})
	d := page.Build(verify.Check(s), s, nil, page.Options{})
	if got := d.Faults[0].Stories; !cmp.Equal(got, []string{"m:r1-hit"}) {
		t.Errorf("kill api-1 hit %v, want [m:r1-hit] (its request cut off)", got)
	}
}
