package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/services/psp/internal/charge"
	"github.com/oncepay/oncepay/services/psp/internal/faults"
	"github.com/oncepay/oncepay/services/psp/internal/psptest"
)

func setKnobs(t *testing.T, s *psptest.Server, p faults.Patch) {
	t.Helper()
	if _, err := s.Faults.Update(p); err != nil {
		t.Fatal(err)
	}
}

// TestFaultsWithoutCharging covers the knobs that fail a call before it
// charges: the retry with the same key, once the fault is off, charges once.
func TestFaultsWithoutCharging(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		on, off faults.Patch
		status  int
		outcome charge.Outcome
		typ     string
	}{
		{"fail_before", faults.Patch{FailBeforeRate: new(1.0)}, faults.Patch{FailBeforeRate: new(0.0)}, http.StatusServiceUnavailable, charge.OutcomeFailBefore, "simulated-outage"},
		{"error_rate", faults.Patch{ErrorRate: new(1.0)}, faults.Patch{ErrorRate: new(0.0)}, http.StatusInternalServerError, charge.OutcomeError, "simulated-error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := psptest.Start(t, psptest.Knobs())
			setKnobs(t, s, tt.on)
			body := chargeBody(700, "cus_1", "pay_1")
			for range 3 {
				p := wantProblem(t, postCharge(t, s, "key-1", body), tt.status)
				if !strings.HasSuffix(p.Type, tt.typ) {
					t.Errorf("type = %q, want …%s", p.Type, tt.typ)
				}
			}
			if sum := readSummary(t, s); sum.Charges != 0 || sum.CallsByOutcome[tt.outcome] != 3 {
				t.Fatalf("after 3 faults: %+v, want 0 charges, 3 %s calls", sum, tt.outcome)
			}
			setKnobs(t, s, tt.off)
			first := postCharge(t, s, "key-1", body)
			if first.Status != http.StatusCreated || first.Header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("retry: %d replayed=%q %s, want a fresh 201", first.Status, first.Header.Get("Idempotent-Replayed"), first.Body)
			}
			if again := postCharge(t, s, "key-1", body); !bytes.Equal(again.Body, first.Body) {
				t.Errorf("second retry %s, want replay of %s", again.Body, first.Body)
			}
			l := readLedger(t, s, "pay_1")
			want := []string{string(tt.outcome), string(tt.outcome), string(tt.outcome), "charged", "replayed"}
			if diff := cmp.Diff(want, outcomes(l.Calls)); diff != "" {
				t.Errorf("call outcomes (-want +got):\n%s", diff)
			}
			if len(l.Charges) != 1 {
				t.Errorf("%d charges, want 1", len(l.Charges))
			}
			if c := l.Calls[0]; c.ChargeID != nil || deref(c.HTTPStatus) != int32(tt.status) || deref(c.Amount) != 700 {
				t.Errorf("fault call %+v: want no charge id, status %d, amount 700", c, tt.status)
			}
		})
	}
}

func TestFailAfterChargesThenDropsTheConnection(t *testing.T) {
	t.Parallel()
	k := psptest.Knobs()
	k.FailAfterRate = 1
	s := psptest.Start(t, k)
	body := chargeBody(900, "cus_1", "pay_1")

	_, err := trySend(t.Context(), http.MethodPost, s.URL+"/v1/charges", chargeHeader("key-1"), body)
	if err == nil {
		t.Fatal("fail_after: got an answer, want a transport error")
	}
	t.Logf("client saw: %v", err)

	l := readLedger(t, s, "pay_1")
	if len(l.Charges) != 1 {
		t.Fatalf("charges after fail_after = %+v, want 1", l.Charges)
	}
	id := l.Charges[0].ID
	if c := l.Calls[0]; c.Outcome != charge.OutcomeFailAfter || deref(c.ChargeID) != id || c.HTTPStatus != nil {
		t.Errorf("call = %+v, want fail_after with charge %s and no status", c, id)
	}

	// fail_after only hits calls that create a charge: the retry is answered.
	retry := postCharge(t, s, "key-1", body)
	if retry.Status != http.StatusCreated || retry.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d replayed=%q %s", retry.Status, retry.Header.Get("Idempotent-Replayed"), retry.Body)
	}
	if got := decodeJSON[charge.Charge](t, retry); got.ID != id || got.Amount != 900 {
		t.Errorf("retry answered %+v, want the stored charge %s", got, id)
	}
	if sum := readSummary(t, s); sum.Charges != 1 || sum.CallsByOutcome[charge.OutcomeFailAfter] != 1 || sum.CallsByOutcome[charge.OutcomeReplayed] != 1 {
		t.Errorf("summary = %+v", sum)
	}
}

func TestIdempotencyOffChargesEveryCall(t *testing.T) {
	t.Parallel()
	k := psptest.Knobs()
	k.Idempotency = false
	s := psptest.Start(t, k)
	body := chargeBody(1000, "cus_1", "pay_dup")

	const n = 5
	ids := map[string]bool{}
	for range n {
		a := postCharge(t, s, "same-key", body)
		if a.Status != http.StatusCreated || a.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("%d replayed=%q %s, want a fresh 201", a.Status, a.Header.Get("Idempotent-Replayed"), a.Body)
		}
		ids[decodeJSON[charge.Charge](t, a).ID] = true
	}
	// No mismatch check either.
	if a := postCharge(t, s, "same-key", chargeBody(2000, "cus_1", "pay_other")); a.Status != http.StatusCreated {
		t.Errorf("other payload, same key: %d %s, want 201", a.Status, a.Body)
	}
	if len(ids) != n {
		t.Errorf("%d distinct charge ids for %d calls", len(ids), n)
	}
	sum := readSummary(t, s)
	if sum.Charges != n+1 || sum.CallsByOutcome[charge.OutcomeCharged] != n+1 {
		t.Errorf("summary = %+v, want %d charges", sum, n+1)
	}
	if diff := cmp.Diff([]string{"pay_dup"}, sum.ReferencesChargedMoreThanOnce); diff != "" {
		t.Errorf("references charged more than once (-want +got):\n%s", diff)
	}
}

func TestLatency(t *testing.T) {
	t.Parallel()
	k := psptest.Knobs()
	k.LatencyMS = 150
	s := psptest.Start(t, k)

	start := time.Now()
	if a := postCharge(t, s, "slow", chargeBody(100, "cus_1", "pay_slow")); a.Status != http.StatusCreated {
		t.Fatalf("%d %s", a.Status, a.Body)
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Errorf("charge took %v with latency 150ms", took)
	}

	// A caller that gives up during the latency charges nothing.
	setKnobs(t, s, faults.Patch{LatencyMS: new(int64(5000))})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := trySend(ctx, http.MethodPost, s.URL+"/v1/charges", chargeHeader("gone"), chargeBody(100, "cus_1", "pay_gone"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		l := readLedger(t, s, "pay_gone")
		if len(l.Calls) == 1 {
			if l.Calls[0].Outcome != charge.OutcomeCancelled || l.Calls[0].HTTPStatus != nil || len(l.Charges) != 0 {
				t.Errorf("ledger = %+v, want one cancelled call without status and no charge", l)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled call was never recorded: %+v", l)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
