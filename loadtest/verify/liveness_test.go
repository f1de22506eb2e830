package verify_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/record"
	"github.com/oncepay/oncepay/loadtest/verify"
)

// load is a synthetic client history: new payments answered 2xx at a
// steady rate per second from 0 to the end, minus the stretches where
// goodput is down.
type load struct {
	end  time.Duration
	rate int
	down [][2]time.Duration // [from, to): nothing answered 2xx
	// burst: each payment refused in a down stretch is retried once it is
	// over, all within its first second, and answered 2xx
	burst bool
}

func (l load) attempts() []record.Attempt {
	var out []record.Attempt
	step := time.Second / time.Duration(l.rate)
	for i, at := 0, time.Duration(0); at < l.end; i, at = i+1, at+step {
		a := attempt(at, 20*time.Millisecond, fmt.Sprintf("g-%d", i), record.ClassOK)
		for _, d := range l.down {
			if at >= d[0] && at < d[1] {
				a.Status, a.Class = 503, record.ClassUnavailable
				if l.burst {
					retry := d[1] + time.Duration(i%20)*50*time.Millisecond
					out = append(out, attempt(retry, 20*time.Millisecond, a.Key, record.ClassOK))
				}
			}
		}
		out = append(out, a)
	}
	return out
}

func attempt(at, took time.Duration, key string, class record.Class) record.Attempt {
	status := map[record.Class]int{record.ClassOK: 202, record.ClassConflict: 409, record.ClassMismatch: 422,
		record.ClassUnavailable: 503, record.ClassCutOff: 0, record.ClassTimeout: 0}[class]
	return record.Attempt{Kind: "attempt", TS: ms(at), End: ms(at + took), Scenario: "steady", Merchant: "merchant_a", Key: key,
		Amount: 1000, N: 1, Status: status, Class: class, DurationMS: float64(took.Milliseconds()), Final: true}
}

func faultAt(seq int, at time.Duration, kind string, action fault.Action, forD time.Duration) fault.Event {
	return fault.Event{Seq: seq, Time: t0.Add(at), Kind: kind, Action: action, Target: "redis", ForMS: forD.Milliseconds()}
}

// liveness returns the invariant 8 violations of s, as "kind ids...".
func liveness(t *testing.T, s verify.Snapshot) (verify.Report, []string) {
	t.Helper()
	r := verify.Check(s)
	var got []string
	for _, v := range r.Violations {
		if v.Invariant == 8 {
			got = append(got, v.Kind)
		}
	}
	return r, got
}

func TestRecovery(t *testing.T) {
	t.Parallel()
	restart := func(at time.Duration) fault.Event { return faultAt(1, at, "restart-redis", fault.ActionRestart, 0) }
	tests := []struct {
		name    string
		load    load
		faults  []fault.Event
		want    []string
		wantRec []bool // per fault: recovered
		wantIn  []time.Duration
	}{
		{"back at once", load{end: 60 * time.Second, rate: 20, down: [][2]time.Duration{{20 * time.Second, 22 * time.Second}}},
			[]fault.Event{restart(20 * time.Second)}, nil, []bool{true}, []time.Duration{2 * time.Second}},
		{"never back", load{end: 60 * time.Second, rate: 20, down: [][2]time.Duration{{20 * time.Second, time.Hour}}},
			[]fault.Event{restart(20 * time.Second)}, []string{verify.KindNoRecovery}, []bool{false}, []time.Duration{0}},
		{"back after the bound", load{end: 60 * time.Second, rate: 20, down: [][2]time.Duration{{20 * time.Second, 35 * time.Second}}},
			[]fault.Event{restart(20 * time.Second)}, []string{verify.KindSlowRecovery}, []bool{true}, []time.Duration{15 * time.Second}},
		{"stall back within its bound", load{end: 40 * time.Second, rate: 50, down: [][2]time.Duration{{20 * time.Second, 25 * time.Second}}},
			[]fault.Event{faultAt(1, 20*time.Second, "stall-redis", fault.ActionStall, 2*time.Second)}, nil, []bool{true}, []time.Duration{3 * time.Second}},
		{"stall down 7s after its end (the pipe defect)", load{end: 40 * time.Second, rate: 50, down: [][2]time.Duration{{20 * time.Second, 29 * time.Second}}},
			[]fault.Event{faultAt(1, 20*time.Second, "stall-redis", fault.ActionStall, 2*time.Second)},
			[]string{verify.KindSlowRecovery}, []bool{true}, []time.Duration{7 * time.Second}},
		{"next fault before the bound: not measured, yet never back by the end", load{end: 80 * time.Second, rate: 20,
			down: [][2]time.Duration{{20 * time.Second, 22 * time.Second}, {30 * time.Second, time.Hour}}},
			[]fault.Event{restart(20 * time.Second), faultAt(2, 30*time.Second, "restart-rabbitmq", fault.ActionRestart, 0),
				faultAt(3, 35*time.Second, "restart-redis", fault.ActionRestart, 0)},
			[]string{verify.KindNoRecovery}, []bool{true, false, false}, []time.Duration{2 * time.Second, 0, 0}},
		{"next fault before the bound, back after it: not measured", load{end: 60 * time.Second, rate: 20,
			down: [][2]time.Duration{{20 * time.Second, 22 * time.Second}, {30 * time.Second, 40 * time.Second}}},
			[]fault.Event{restart(20 * time.Second), faultAt(2, 30*time.Second, "restart-rabbitmq", fault.ActionRestart, 0),
				faultAt(3, 35*time.Second, "restart-redis", fault.ActionRestart, 0)},
			nil, []bool{true, false, false}, []time.Duration{2 * time.Second, 0, 0}},
		{"the retry burst after a fault is no baseline for the next", load{end: 80 * time.Second, rate: 20, burst: true,
			down: [][2]time.Duration{{20 * time.Second, 25 * time.Second}}},
			[]fault.Event{restart(20 * time.Second), faultAt(2, 30*time.Second, "migrate-slot", fault.ActionMigrateSlot, 0)},
			nil, []bool{true, true}, []time.Duration{2500 * time.Millisecond, 0}},
		{"every fault unmeasurable", load{end: 60 * time.Second, rate: 20, down: [][2]time.Duration{{0, time.Hour}}},
			[]fault.Event{restart(20 * time.Second)}, []string{verify.KindRecoveryUnmeasured}, []bool{false}, []time.Duration{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := verify.Snapshot{RunID: "r1", Now: t0.Add(time.Hour), Attempts: tt.load.attempts(), Faults: tt.faults}
			r, got := liveness(t, s)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("invariant 8 violations (-want +got):\n%s", diff)
			}
			if len(r.Liveness.Recoveries) != len(tt.faults) {
				t.Fatalf("%d recoveries for %d faults", len(r.Liveness.Recoveries), len(tt.faults))
			}
			for i, rec := range r.Liveness.Recoveries {
				if rec.Recovered != tt.wantRec[i] || (rec.Recovered && (rec.In < tt.wantIn[i]-500*time.Millisecond || rec.In > tt.wantIn[i]+500*time.Millisecond)) {
					t.Errorf("fault %d: recovered %v in %s, want %v in %s (%+v)", i+1, rec.Recovered, rec.In, tt.wantRec[i], tt.wantIn[i], rec)
				}
				if r.Matrix[i].Recovery == nil || *r.Matrix[i].Recovery != rec {
					t.Errorf("fault %d: matrix row recovery %+v, want %+v", i+1, r.Matrix[i].Recovery, rec)
				}
			}
		})
	}
}

func TestStallTimeoutsAreViolations(t *testing.T) {
	t.Parallel()
	l := load{end: 40 * time.Second, rate: 20, down: [][2]time.Duration{{20 * time.Second, 22 * time.Second}}}
	s := verify.Snapshot{RunID: "r1", Now: t0.Add(time.Hour), Attempts: l.attempts(),
		Faults: []fault.Event{faultAt(1, 20*time.Second, "stall-redis", fault.ActionStall, 2*time.Second)}}
	if _, got := liveness(t, s); len(got) != 0 {
		t.Fatalf("503s while stalled: violations %v, want none", got)
	}
	s.Attempts = append(s.Attempts, attempt(20*time.Second, 3*time.Second, "slow", record.ClassTimeout))
	r, got := liveness(t, s)
	if diff := cmp.Diff([]string{verify.KindStallTimeouts}, got); diff != "" {
		t.Errorf("a timeout while stalled (-want +got):\n%s", diff)
	}
	if rec := r.Liveness.Recoveries[0]; rec.Shed != 40 || rec.Timeouts != 1 {
		t.Errorf("shed %d, timeouts %d; want 40, 1", rec.Shed, rec.Timeouts)
	}
}

func TestBlockedKeys(t *testing.T) {
	t.Parallel()
	const key = "k"
	row := verify.Payment{ID: "pay_k", Merchant: "merchant_a", Key: key, Fingerprint: "fpA", Amount: 1000, Currency: "EUR",
		Status: "succeeded", CreatedAt: t0}
	retries := func(class record.Class, from, to time.Duration) []record.Attempt {
		var out []record.Attempt
		for at := from; at <= to; at += time.Second {
			a := attempt(at, 5*time.Millisecond, key, class)
			a.Fingerprint = "fpB"
			out = append(out, a)
		}
		return out
	}
	holder := attempt(0, time.Second, key, record.ClassCutOff) // its replica killed at 1s
	tests := []struct {
		name     string
		attempts []record.Attempt
		payments []verify.Payment
		want     []string
		status   int
		span     time.Duration
	}{
		{"409 while the lease runs", append([]record.Attempt{holder}, retries(record.ClassConflict, 2*time.Second, 11*time.Second)...),
			nil, nil, 409, 9 * time.Second},
		{"409 long after the holder is gone", append([]record.Attempt{holder}, retries(record.ClassConflict, 2*time.Second, 20*time.Second)...),
			nil, []string{verify.KindKeyBlocked}, 409, 18 * time.Second},
		{"409 to its own retried claim, past a lease", retries(record.ClassConflict, 0, 15*time.Second),
			nil, []string{verify.KindKeyBlocked}, 409, 15 * time.Second},
		{"422 against another payload", retries(record.ClassMismatch, 2*time.Second, 4*time.Second),
			[]verify.Payment{row}, nil, 422, 2 * time.Second},
		{"422 with no payment for the key", append([]record.Attempt{holder}, retries(record.ClassMismatch, 2*time.Second, 4*time.Second)...),
			nil, []string{verify.KindMismatchNoPayment}, 422, 2 * time.Second},
		{"422 against the same payload", retries(record.ClassMismatch, 2*time.Second, 4*time.Second),
			[]verify.Payment{func() verify.Payment { p := row; p.Fingerprint = "fpB"; return p }()}, []string{verify.KindMismatchNoPayment}, 422, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := verify.Snapshot{RunID: "r1", Now: t0.Add(time.Hour), Attempts: tt.attempts, Payments: tt.payments, Lease: 10 * time.Second}
			r, got := liveness(t, s)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("invariant 8 violations (-want +got):\n%s", diff)
			}
			b := r.Liveness.Blocked
			if b == nil || b.Status != tt.status || b.Span() != tt.span || b.Key != "merchant_a:"+key {
				t.Errorf("longest blocked %+v, want %s %d for %s", b, "merchant_a:"+key, tt.status, tt.span)
			}
		})
	}
}

func TestRejectedPayments(t *testing.T) {
	t.Parallel()
	reject := faultAt(1, 10*time.Second, "reject-psp", fault.ActionReject, 15*time.Second)
	reject.Target = "psp"
	pay := func(id, status, reason string, created, updated time.Duration) verify.Payment {
		return verify.Payment{ID: id, Merchant: "merchant_a", Key: id, Amount: 1000, Currency: "EUR", Status: status,
			FailureReason: reason, CreatedAt: t0.Add(created), UpdatedAt: t0.Add(updated)}
	}
	call := func(id string, status int) verify.PSPCall {
		return verify.PSPCall{ReceivedAt: t0.Add(12 * time.Second), Reference: id, IdempotencyKey: "merchant_a:" + id, Outcome: "rejected", HTTPStatus: status}
	}
	tests := []struct {
		name     string
		payments []verify.Payment
		calls    []verify.PSPCall
		dead     []verify.DeadLetter
		want     []string
		counts   verify.Rejected
	}{
		{"failed with the reason, others settled",
			[]verify.Payment{pay("p1", "failed", "rejected: customer_id too long", 11*time.Second, 12*time.Second), pay("p2", "succeeded", "", 12*time.Second, 14*time.Second)},
			[]verify.PSPCall{call("p1", 400)}, nil, nil, verify.Rejected{Payments: 1, Failed: 1, Others: 1}},
		{"a 409 or 429 from the psp is no rejection",
			[]verify.Payment{pay("p1", "succeeded", "", 11*time.Second, 12*time.Second)},
			[]verify.PSPCall{call("p1", 409), call("p1", 429)}, nil, nil, verify.Rejected{Others: 1}},
		{"rejected, left pending",
			[]verify.Payment{pay("p1", "pending", "", 11*time.Second, 11*time.Second)},
			[]verify.PSPCall{call("p1", 422)}, nil, []string{verify.KindRejectedNotFailed}, verify.Rejected{Payments: 1}},
		{"rejected, failed without a reason",
			[]verify.Payment{pay("p1", "failed", "", 11*time.Second, 12*time.Second)},
			[]verify.PSPCall{call("p1", 400)}, nil, []string{verify.KindRejectedNoReason}, verify.Rejected{Payments: 1}},
		{"rejected, dead-lettered",
			[]verify.Payment{pay("p1", "pending", "", 11*time.Second, 11*time.Second)},
			[]verify.PSPCall{call("p1", 400)}, []verify.DeadLetter{{MessageID: "p1", Reason: "rejected"}},
			[]string{verify.KindRejectedDeadLettered}, verify.Rejected{Payments: 1}},
		{"another payment starved meanwhile",
			[]verify.Payment{pay("p1", "failed", "rejected", 11*time.Second, 12*time.Second), pay("p2", "succeeded", "", 12*time.Second, 2*time.Minute)},
			[]verify.PSPCall{call("p1", 400)}, nil, []string{verify.KindOthersStarved}, verify.Rejected{Payments: 1, Failed: 1, Others: 1, OthersLate: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := verify.Snapshot{RunID: "r1", Now: t0.Add(time.Hour), Payments: tt.payments, PSPCallLog: tt.calls, DeadLetters: tt.dead,
				Faults: []fault.Event{reject}}
			r, got := liveness(t, s)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("invariant 8 violations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.counts, r.Liveness.Rejected); diff != "" {
				t.Errorf("rejected counts (-want +got):\n%s", diff)
			}
		})
	}
}
