package verify_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/record"
	"github.com/oncepay/oncepay/loadtest/verify"
)

var t0 = time.Date(2025, 11, 21, 8, 0, 0, 0, time.UTC)

func ms(d time.Duration) float64 { return float64(t0.Add(d).UnixMicro()) / 1000 }

// fp is the fixtures' payload fingerprint of a key's payload.
func fp(merchant, key string) string { return "fp:" + merchant + ":" + key }

// clean is a small run where every invariant holds: pay_1 succeeded after a
// cut-off and a replay, pay_2 was declined, and merchant_b used pay_1's key
// string for its own pay_3.
func clean() verify.Snapshot {
	ok := func(at time.Duration, merchant, key string, amount int64, id, body string, n int, replayed bool) record.Attempt {
		return record.Attempt{Kind: "attempt", TS: ms(at), Scenario: "steady", Merchant: merchant, Key: key, Amount: amount, Fingerprint: fp(merchant, key), N: n,
			Target: "127.0.0.1:8080", Status: 202, Class: record.ClassOK, PaymentID: id, BodySHA256: body, Replayed: replayed,
			Final: true, Outcome: record.OutcomeOK}
	}
	cut := record.Attempt{Kind: "attempt", TS: ms(0), Scenario: "steady", Merchant: "merchant_a", Key: "r1-1", Amount: 1000, Fingerprint: fp("merchant_a", "r1-1"), N: 1,
		Target: "127.0.0.1:8080", Class: record.ClassCutOff, ErrorCode: 1000, Error: "EOF"}
	return verify.Snapshot{
		RunID: "r1",
		Now:   t0.Add(time.Minute),
		Payments: []verify.Payment{
			{ID: "pay_1", Merchant: "merchant_a", Key: "r1-1", Fingerprint: fp("merchant_a", "r1-1"), Amount: 1000, Currency: "EUR", Status: "succeeded", PSPChargeID: "ch_1", ResponseStatus: 202, ResponseSHA256: "h1", CreatedAt: t0.Add(time.Second)},
			{ID: "pay_2", Merchant: "merchant_a", Key: "r1-2", Fingerprint: fp("merchant_a", "r1-2"), Amount: 402, Currency: "EUR", Status: "failed", ResponseStatus: 202, ResponseSHA256: "h2", CreatedAt: t0.Add(2 * time.Second)},
			{ID: "pay_3", Merchant: "merchant_b", Key: "r1-1", Fingerprint: fp("merchant_b", "r1-1"), Amount: 1000, Currency: "EUR", Status: "succeeded", PSPChargeID: "ch_3", ResponseStatus: 202, ResponseSHA256: "h3", CreatedAt: t0.Add(3 * time.Second)},
		},
		Outbox:    []verify.OutboxRow{{ID: 1, PaymentID: "pay_1", Published: true}, {ID: 2, PaymentID: "pay_2", Published: true}, {ID: 3, PaymentID: "pay_3", Published: true}},
		Takeovers: []verify.Takeover{{PaymentID: "pay_1", Attempt: 2, Worker: "worker-2", TakenAt: t0.Add(20 * time.Second)}},
		Charges: []verify.Charge{
			{ID: "ch_1", IdempotencyKey: "merchant_a:r1-1", Reference: "pay_1", Amount: 1000, Currency: "EUR"},
			{ID: "ch_3", IdempotencyKey: "merchant_b:r1-1", Reference: "pay_3", Amount: 1000, Currency: "EUR"},
		},
		PSPCalls: map[string]int{"charged": 2, "declined": 1, "replayed": 1},
		Boundary: []verify.Stage{
			{Key: "idem:v1:{merchant_a:r1-1}", Stage: "api", State: "C", Attempt: 2},
			{Key: "idem:v1:{merchant_a:r1-1}", Stage: "charge", State: "C", Attempt: 2},
			{Key: "idem:v1:{merchant_a:r1-2}", Stage: "api", State: "C", Attempt: 1},
			{Key: "idem:v1:{merchant_b:r1-1}", Stage: "charge", State: "P", Lease: t0.Add(2 * time.Minute), Attempt: 1},
		},
		Queues: []verify.Queue{{Name: "payments.charge"}, {Name: "payments.charge.dlq"}},
		Attempts: []record.Attempt{
			cut,
			ok(2*time.Second, "merchant_a", "r1-1", 1000, "pay_1", "h1", 2, false),
			ok(2500*time.Millisecond, "merchant_a", "r1-2", 402, "pay_2", "h2", 1, false),
			ok(3*time.Second, "merchant_b", "r1-1", 1000, "pay_3", "h3", 1, false),
			ok(4*time.Second, "merchant_a", "r1-1", 1000, "pay_1", "h1", 1, true),
		},
		Faults: []fault.Event{
			{Seq: 1, Time: t0.Add(time.Second), Action: fault.ActionKill, Target: "api-1", PID: 42, MidRequest: new(true), InFlight: 1},
		},
		Drain:        verify.DrainResult{Took: 3 * time.Second, Limit: time.Minute, Complete: true},
		ExpectFaults: true,
	}
}

func TestCheckClean(t *testing.T) {
	t.Parallel()
	r := verify.Check(clean())
	if !r.Pass || len(r.Violations) != 0 {
		t.Fatalf("clean run: Pass=%v, violations %+v", r.Pass, r.Violations)
	}
	want := verify.Payments{Total: 3, Succeeded: 2, Failed: 1}
	if diff := cmp.Diff(want, r.Payments); diff != "" {
		t.Errorf("payments (-want +got):\n%s", diff)
	}
	if r.Requests.CutOff != 1 || r.Requests.Replays != 1 || r.Requests.Logical != 4 || r.Requests.Retries != 1 {
		t.Errorf("requests = %+v; want 1 cut-off, 1 replay, 4 logical, 1 retry", r.Requests)
	}
	if r.Boundary != (verify.Boundary{Records: 3, Completed: 3, PendingLive: 1}) {
		t.Errorf("boundary = %+v", r.Boundary)
	}
	if len(r.Faults) != 1 || r.Faults[0].At != time.Second {
		t.Errorf("faults = %+v, want one at t+1s", r.Faults)
	}
}

func TestCheckViolations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(s *verify.Snapshot)
		want   []verify.Violation // Detail is not compared
	}{
		{
			name: "lost payment: a 2xx with no row",
			mutate: func(s *verify.Snapshot) {
				s.Attempts = append(s.Attempts, record.Attempt{Kind: "attempt", TS: ms(5 * time.Second), Merchant: "merchant_a", Key: "r1-9",
					Amount: 700, Fingerprint: fp("merchant_a", "r1-9"), N: 1, Status: 202, Class: record.ClassOK, PaymentID: "pay_9", BodySHA256: "h9", Final: true, Outcome: record.OutcomeOK})
			},
			want: []verify.Violation{{Invariant: 1, Kind: verify.KindLostPayment, IDs: []string{"pay_9", "merchant_a:r1-9"}}, {Invariant: 7, Kind: verify.KindNotLinearizable, IDs: []string{"merchant_a:r1-9"}}},
		},
		{
			name:   "amount differs",
			mutate: func(s *verify.Snapshot) { s.Attempts[4].Amount = 999 },
			want: []verify.Violation{
				{Invariant: 1, Kind: verify.KindAmountDiffers, IDs: []string{"pay_1", "merchant_a:r1-1"}},
				{Invariant: 7, Kind: verify.KindNotLinearizable, IDs: []string{"merchant_a:r1-1"}},
			},
		},
		{
			name: "an ambiguous attempt for 1000, a row and a charge of 999",
			mutate: func(s *verify.Snapshot) {
				s.Attempts = []record.Attempt{s.Attempts[0], s.Attempts[2], s.Attempts[3]}
				s.Payments[0].Amount, s.Charges[0].Amount = 999, 999
			},
			want: []verify.Violation{{Invariant: 7, Kind: verify.KindNotLinearizable, IDs: []string{"merchant_a:r1-1"}}},
		},
		{
			name:   "answered with another merchant's payment",
			mutate: func(s *verify.Snapshot) { s.Attempts[3].PaymentID, s.Attempts[3].BodySHA256 = "pay_1", "h1" },
			want: []verify.Violation{
				{Invariant: 1, Kind: verify.KindWrongPayment, IDs: []string{"pay_1", "merchant_b:r1-1", "merchant_a:r1-1"}},
				{Invariant: 7, Kind: verify.KindNotLinearizable, IDs: []string{"merchant_b:r1-1"}},
			},
		},
		{
			name:   "mismatched replay",
			mutate: func(s *verify.Snapshot) { s.Attempts[4].BodySHA256 = "hX" },
			want: []verify.Violation{
				{Invariant: 2, Kind: verify.KindReplayDiffers, IDs: []string{"merchant_a:r1-1", "sha256:h1", "sha256:hX"}},
				{Invariant: 2, Kind: verify.KindStoredDiffers, IDs: []string{"pay_1", "merchant_a:r1-1"}},
				{Invariant: 7, Kind: verify.KindNotLinearizable, IDs: []string{"merchant_a:r1-1"}},
			},
		},
		{
			name: "one key, two payments",
			mutate: func(s *verify.Snapshot) {
				s.Payments = append(s.Payments, verify.Payment{ID: "pay_4", Merchant: "merchant_a", Key: "r1-1", Fingerprint: fp("merchant_a", "r1-1"), Amount: 1000, Currency: "EUR", Status: "failed", ResponseStatus: 202, ResponseSHA256: "h4"})
				s.Outbox = append(s.Outbox, verify.OutboxRow{ID: 4, PaymentID: "pay_4", Published: true})
			},
			want: []verify.Violation{{Invariant: 2, Kind: verify.KindDuplicatePayments, IDs: []string{"merchant_a:r1-1", "pay_1", "pay_4"}}},
		},
		{
			name: "double charge",
			mutate: func(s *verify.Snapshot) {
				s.Charges = append(s.Charges, verify.Charge{ID: "ch_1b", IdempotencyKey: "merchant_a:r1-1", Reference: "pay_1", Amount: 1000, Currency: "EUR"})
			},
			want: []verify.Violation{{Invariant: 3, Kind: verify.KindDoubleCharge, IDs: []string{"pay_1", "ch_1", "ch_1b"}}, {Invariant: 7, Kind: verify.KindNotLinearizable, IDs: []string{"merchant_a:r1-1"}}},
		},
		{
			name: "failed but charged",
			mutate: func(s *verify.Snapshot) {
				s.Charges = append(s.Charges, verify.Charge{ID: "ch_2", IdempotencyKey: "merchant_a:r1-2", Reference: "pay_2", Amount: 402, Currency: "EUR"})
			},
			want: []verify.Violation{{Invariant: 3, Kind: verify.KindFailedCharged, IDs: []string{"pay_2", "ch_2"}}, {Invariant: 7, Kind: verify.KindNotLinearizable, IDs: []string{"merchant_a:r1-2"}}},
		},
		{
			name:   "succeeded without a charge",
			mutate: func(s *verify.Snapshot) { s.Charges = s.Charges[1:] },
			want:   []verify.Violation{{Invariant: 3, Kind: verify.KindSucceededNoCharge, IDs: []string{"pay_1", "merchant_a:r1-1"}}, {Invariant: 7, Kind: verify.KindNotLinearizable, IDs: []string{"merchant_a:r1-1"}}},
		},
		{
			name:   "charged another amount",
			mutate: func(s *verify.Snapshot) { s.Charges[0].Amount = 10 },
			want:   []verify.Violation{{Invariant: 3, Kind: verify.KindChargeAmount, IDs: []string{"pay_1", "ch_1"}}, {Invariant: 7, Kind: verify.KindNotLinearizable, IDs: []string{"merchant_a:r1-1"}}},
		},
		{
			name: "stuck pending",
			mutate: func(s *verify.Snapshot) {
				s.Payments[2].Status = "pending"
				s.Charges = s.Charges[:1]
			},
			want: []verify.Violation{{Invariant: 4, Kind: verify.KindStuckPending, IDs: []string{"pay_3", "merchant_b:r1-1"}}},
		},
		{
			name:   "stuck pending, yet charged",
			mutate: func(s *verify.Snapshot) { s.Payments[0].Status = "pending" },
			want: []verify.Violation{
				{Invariant: 3, Kind: verify.KindPendingCharged, IDs: []string{"pay_1", "ch_1"}},
				{Invariant: 4, Kind: verify.KindStuckPending, IDs: []string{"pay_1", "merchant_a:r1-1", "ch_1"}},
			},
		},
		{
			name: "dead-lettered, yet charged",
			mutate: func(s *verify.Snapshot) {
				s.Payments[2].Status = "pending"
				s.DeadLetters = []verify.DeadLetter{{MessageID: "pay_3", Reason: "delivery_limit"}}
			},
			want: []verify.Violation{
				{Invariant: 3, Kind: verify.KindPendingCharged, IDs: []string{"pay_3", "ch_3"}},
				{Invariant: 4, Kind: verify.KindDeadLettered, IDs: []string{"pay_3", "merchant_b:r1-1"}},
			},
		},
		{
			name: "dead-lettered by the broker's delivery limit, settled since",
			mutate: func(s *verify.Snapshot) {
				s.DeadLetters = []verify.DeadLetter{{MessageID: "pay_3", Reason: "delivery_limit"}}
			},
			want: []verify.Violation{{Invariant: 4, Kind: verify.KindDeadLettered, IDs: []string{"pay_3", "merchant_b:r1-1"}}},
		},
		{
			name: "dead-lettered after a failed forward, pending",
			mutate: func(s *verify.Snapshot) {
				s.Payments[2].Status = "pending"
				s.Charges = s.Charges[:1]
				s.DeadLetters = []verify.DeadLetter{{MessageID: "pay_3", Reason: "rejected"}, {MessageID: "pay_3", Reason: "delivery_limit"}, {MessageID: "pay_3", Reason: "delivery_limit"}}
			},
			want: []verify.Violation{{Invariant: 4, Kind: verify.KindDeadLettered, IDs: []string{"pay_3", "merchant_b:r1-1"}}},
		},
		{
			name: "dead letters of earlier runs are not judged",
			mutate: func(s *verify.Snapshot) {
				s.DeadLetters = []verify.DeadLetter{{MessageID: "pay_of_an_earlier_run", Reason: "delivery_limit"}, {MessageID: "not-a-payment", Reason: "out of attempts (4): psp: 503"}}
			},
		},
		{
			name: "a run that caught a violation did not prove nothing",
			mutate: func(s *verify.Snapshot) {
				s.Attempts = s.Attempts[1:]
				s.Takeovers = nil
				s.Charges = append(s.Charges, verify.Charge{ID: "ch_1b", IdempotencyKey: "merchant_a:r1-1", Reference: "pay_1", Amount: 1000, Currency: "EUR"})
			},
			want: []verify.Violation{{Invariant: 3, Kind: verify.KindDoubleCharge, IDs: []string{"pay_1", "ch_1", "ch_1b"}}, {Invariant: 7, Kind: verify.KindNotLinearizable, IDs: []string{"merchant_a:r1-1"}}},
		},
		{
			name: "no takeover needed: a worker kill seen frozen mid-charge landed",
			mutate: func(s *verify.Snapshot) {
				s.Attempts = s.Attempts[1:]
				s.Takeovers = nil
				s.Faults = []fault.Event{{Seq: 1, Time: t0.Add(time.Second), Action: fault.ActionKill, Target: "worker-1", MidRequest: new(true), InFlight: 2, Frozen: true}}
			},
		},
		{
			name: "the driver cut a request off, the client saw none",
			mutate: func(s *verify.Snapshot) {
				s.Faults[0].Frozen = true // the cut-off in clean() ended a second before the kill
			},
			want: []verify.Violation{{Invariant: 6, Kind: verify.KindDetectorsDisagree, IDs: []string{"api-1"}}},
		},
		{
			name: "the driver cut a request off, the client saw it",
			mutate: func(s *verify.Snapshot) {
				s.Faults[0].Frozen = true
				s.Attempts[0].DurationMS = 1010
			},
		},
		{
			name: "a frozen worker whose lease nobody took over did not land",
			mutate: func(s *verify.Snapshot) {
				s.RequireLanded = true
				// clean()'s takeover (t+20s) is within pause-worker's For+Settle of t+1s, this one's is not
				s.Faults = append(s.Faults, fault.Event{Seq: 2, Time: t0.Add(21 * time.Second), Kind: "pause-worker", Action: fault.ActionPause,
					Target: "worker-1", ForMS: 35000, MidRequest: new(true), InFlight: 1, Frozen: true})
			},
			want: []verify.Violation{{Invariant: 6, Kind: verify.KindFaultMissed, IDs: []string{"pause-worker", "worker-1"}}},
		},
		{
			name: "a frozen worker whose lease was taken over landed",
			mutate: func(s *verify.Snapshot) {
				s.RequireLanded = true
				s.Faults = append(s.Faults, fault.Event{Seq: 2, Time: t0.Add(5 * time.Second), Kind: "pause-worker", Action: fault.ActionPause,
					Target: "worker-1", ForMS: 35000, MidRequest: new(true), InFlight: 1, Frozen: true})
			},
		},
		{
			name: "a fault that missed, when every fault must land",
			mutate: func(s *verify.Snapshot) {
				s.RequireLanded = true
				s.Faults = append(s.Faults, fault.Event{Seq: 2, Time: t0.Add(5 * time.Second), Kind: "kill-postgres", Action: fault.ActionKill, Target: "postgres", MidRequest: new(false), Evidence: "idle"},
					fault.Event{Seq: 3, Time: t0.Add(6 * time.Second), Kind: "psp-outage", Action: fault.ActionOutage, Target: "psp", MidRequest: new(true), Error: "psp outage: 404"})
			},
			want: []verify.Violation{
				{Invariant: 6, Kind: verify.KindFaultMissed, IDs: []string{"kill-postgres", "postgres"}},
				{Invariant: 6, Kind: verify.KindFaultMissed, IDs: []string{"psp-outage", "psp"}},
			},
		},
		{
			name:   "boundary record pending past its lease",
			mutate: func(s *verify.Snapshot) { s.Boundary[3].Lease = s.Now.Add(-3 * time.Second) },
			want:   []verify.Violation{{Invariant: 5, Kind: verify.KindStaleBoundary, IDs: []string{"idem:v1:{merchant_b:r1-1}", "charge"}}},
		},
		{
			name:   "unpublished outbox row",
			mutate: func(s *verify.Snapshot) { s.Outbox[1].Published = false },
			want:   []verify.Violation{{Invariant: 5, Kind: verify.KindUnpublishedOutbox, IDs: []string{"2", "pay_2"}}},
		},
		{
			name:   "payment without an outbox row",
			mutate: func(s *verify.Snapshot) { s.Outbox = s.Outbox[:2] },
			want:   []verify.Violation{{Invariant: 5, Kind: verify.KindNoOutbox, IDs: []string{"pay_3"}}},
		},
		{
			name: "no fault landed",
			mutate: func(s *verify.Snapshot) {
				s.Attempts = s.Attempts[1:]
				s.Takeovers = nil
			},
			want: []verify.Violation{{Invariant: 6, Kind: verify.KindNothingLanded}},
		},
		{
			name: "a plan without replica faults landed: its failover was applied mid-request",
			mutate: func(s *verify.Snapshot) {
				s.Attempts = s.Attempts[1:]
				s.Takeovers = nil
				s.Faults = []fault.Event{{Seq: 1, Time: t0.Add(time.Second), Kind: "failover-postgres-lagged", Action: fault.ActionFailoverLagged,
					Target: "postgres", MidRequest: new(true), InFlight: 1, Hit: "api-2"}}
			},
		},
		{
			name: "a plan without replica faults, none applied mid-request: nothing landed",
			mutate: func(s *verify.Snapshot) {
				s.Attempts = s.Attempts[1:]
				s.Takeovers = nil
				s.Faults = []fault.Event{
					{Seq: 1, Time: t0.Add(time.Second), Kind: "failover-postgres", Action: fault.ActionFailover, Target: "postgres", MidRequest: new(false), Evidence: "idle"},
					{Seq: 2, Time: t0.Add(2 * time.Second), Kind: "switchover-postgres", Action: fault.ActionSwitchover, Target: "postgres", MidRequest: new(true), Error: "no leader"},
				}
			},
			want: []verify.Violation{{Invariant: 6, Kind: verify.KindNothingLanded}},
		},
		{
			name: "a plan with replica kills asks for their evidence, not a failover's",
			mutate: func(s *verify.Snapshot) {
				s.Attempts = s.Attempts[1:]
				s.Takeovers = nil
				s.Faults = append(s.Faults, fault.Event{Seq: 2, Time: t0.Add(2 * time.Second), Kind: "failover-postgres", Action: fault.ActionFailover,
					Target: "postgres", MidRequest: new(true), InFlight: 1})
			},
			want: []verify.Violation{{Invariant: 6, Kind: verify.KindNothingLanded}},
		},
		{
			name: "a run whose driver applied nothing proved nothing",
			mutate: func(s *verify.Snapshot) {
				s.Attempts, s.Takeovers, s.Faults = s.Attempts[1:], nil, nil
			},
			want: []verify.Violation{{Invariant: 6, Kind: verify.KindNothingLanded}},
		},
		{
			name:   "records without fingerprints cannot be checked",
			mutate: func(s *verify.Snapshot) { s.Attempts[2].Fingerprint = "" },
			want:   []verify.Violation{{Invariant: 7, Kind: verify.KindHistoryUnchecked}},
		},
		{
			name: "nothing landed is fine without faults",
			mutate: func(s *verify.Snapshot) {
				s.Attempts, s.Takeovers, s.Faults, s.ExpectFaults = s.Attempts[1:], nil, nil, false
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := clean()
			tt.mutate(&s)
			r := verify.Check(s)
			for i := range r.Violations {
				if r.Violations[i].Detail == "" {
					t.Errorf("violation %+v has no detail", r.Violations[i])
				}
				r.Violations[i].Detail = ""
			}
			if diff := cmp.Diff(tt.want, r.Violations); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
			if r.Pass != (len(tt.want) == 0) {
				t.Errorf("Pass = %v with %d violations", r.Pass, len(tt.want))
			}
		})
	}
}

// TestCheckDeadLetters: a dead-lettered message of the run's payment is a
// violation of invariant 4 named with its reasons; messages of no payment
// of the run (earlier runs on the same runtime) are counted apart.
func TestCheckDeadLetters(t *testing.T) {
	t.Parallel()
	s := clean()
	s.Payments[2].Status = "pending"
	s.Charges = s.Charges[:1]
	s.DeadLetters = []verify.DeadLetter{
		{MessageID: "pay_3", Reason: "delivery_limit"},
		{MessageID: "pay_0", Reason: "delivery_limit"}, // an earlier run's
		{MessageID: "pay_3", Reason: "rejected"},
		{MessageID: "pay_00", Reason: "expired"}, // an earlier run's
	}
	r := verify.Check(s)
	want := []verify.DeadLetter{{MessageID: "pay_3", Reason: "delivery_limit"}, {MessageID: "pay_3", Reason: "rejected"}}
	if diff := cmp.Diff(want, r.DeadLetter); diff != "" {
		t.Errorf("dead letters of the run (-want +got):\n%s", diff)
	}
	if r.EarlierDeadLetters != 2 || r.Payments.DeadLettered != 1 || r.Payments.Pending != 1 {
		t.Errorf("earlier dead letters %d, payments %+v; want 2 earlier, 1 pending payment dead-lettered", r.EarlierDeadLetters, r.Payments)
	}
	if len(r.Violations) != 1 || r.Violations[0].Kind != verify.KindDeadLettered ||
		r.Violations[0].Detail != "payment pay_3 (pending after the drain) had 2 message(s) dead-lettered: delivery_limit; rejected" {
		t.Errorf("violations %+v, want one dead_lettered naming both reasons", r.Violations)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"dead-lettered messages of this run (2)",
		"dead-lettered messages of no payment of this run (earlier runs): 2, not judged",
		"4 every payment of the run terminal after the drain; none dead-lettered",
	} {
		if !strings.Contains(buf.String(), line) {
			t.Errorf("report text lacks %q:\n%s", line, buf.String())
		}
	}
}

func TestWriteText(t *testing.T) {
	t.Parallel()
	s := clean()
	s.Charges = append(s.Charges, verify.Charge{ID: "ch_1b", IdempotencyKey: "merchant_a:r1-1", Reference: "pay_1", Amount: 1000, Currency: "EUR"})
	var buf bytes.Buffer
	if err := verify.Check(s).WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"run r1: FAIL (2 violations)",
		"7 every key's history linearizable against the model (porcupine)",
		"merchant_a:r1-1 illegal:",
		"transport  cut off in flight 1 (127.0.0.1:8080 1)",
		"payments   3: succeeded 2 · failed 1 · pending 0 · dead-lettered 0",
		"psp        4 calls (charged 2 · declined 1 · replayed 1) -> 3 effective charges",
		"t+1.0s    kill    api-1     pid 42, mid-request (1 in flight, seen after 0ms)",
		"t+20.0s   pay_1 attempt 2 by worker-2",
		"VIOLATED (1)",
		"[3 double_charge] payment pay_1 was charged 2 times (ch_1 1000 EUR, ch_1b 1000 EUR)",
		"ids: pay_1 ch_1 ch_1b",
		"[1 cut off, 1 takeovers, 0 faults seen frozen mid-work]",
		"1   kill-api             api-1             t+1s     yes     api-1             1        0         0      1          1,2,5,6      3",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestCheckMatrix(t *testing.T) {
	t.Parallel()
	s := clean()
	s.Attempts[0].DurationMS = 1010 // the cut-off ends as api-1 is killed
	s.Faults[0].Frozen = true
	s.Faults = append(s.Faults, fault.Event{Seq: 2, Time: t0.Add(2500 * time.Millisecond), Kind: "kill-postgres", Action: fault.ActionKill,
		Target: "postgres", MidRequest: new(true), InFlight: 1, Hit: "worker-2"})
	s.Charges = append(s.Charges, verify.Charge{ID: "ch_3b", IdempotencyKey: "merchant_b:r1-1", Reference: "pay_3", Amount: 1000, Currency: "EUR"})
	r := verify.Check(s)
	want := []verify.FaultRow{
		{Seq: 1, Kind: "kill-api", Target: "api-1", At: time.Second, Landed: true, Hit: "api-1", InFlight: 1, Frozen: true, CutOff: 1,
			Exercises: []int{1, 2, 5, 6}},
		{Seq: 2, Kind: "kill-postgres", Target: "postgres", At: 2500 * time.Millisecond, Landed: true, Hit: "worker-2", InFlight: 1,
			Takeovers: 1, Exercises: []int{1, 3, 4, 5}, Violated: []int{3}},
	}
	if diff := cmp.Diff(want, r.Matrix, cmpopts.IgnoreFields(verify.FaultRow{}, "Recovery")); diff != "" { // liveness_test.go's
		t.Errorf("matrix (-want +got):\n%s", diff)
	}
}
