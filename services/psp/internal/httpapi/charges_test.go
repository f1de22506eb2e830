package httpapi_test

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/services/psp/internal/charge"
	"github.com/oncepay/oncepay/services/psp/internal/psptest"
)

func TestChargeThenReplayIsByteIdentical(t *testing.T) {
	t.Parallel()
	s := psptest.Start(t, psptest.Knobs())
	body := chargeBody(1250, "cus_1", "pay_1")

	first := postCharge(t, s, "key-1", body)
	if first.Status != http.StatusCreated {
		t.Fatalf("first: status %d, body %s", first.Status, first.Body)
	}
	if ct := first.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if h := first.Header.Get("Idempotent-Replayed"); h != "" {
		t.Errorf("first answer has Idempotent-Replayed: %q", h)
	}
	got := decodeJSON[charge.Charge](t, first)
	if !strings.HasPrefix(got.ID, "ch_") {
		t.Errorf("id = %q, want ch_...", got.ID)
	}
	want := charge.Charge{ID: got.ID, Status: "succeeded", Amount: 1250, Currency: "EUR", CustomerID: "cus_1", Reference: "pay_1", CreatedAt: got.CreatedAt}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("charge (-want +got):\n%s", diff)
	}
	raw := decodeJSON[map[string]any](t, first)
	if ts, _ := raw["created_at"].(string); ts == "" {
		t.Errorf("created_at missing in %s", first.Body)
	} else if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
		t.Errorf("created_at %q: %v", ts, err)
	}
	if _, ok := raw["decline_code"]; ok {
		t.Errorf("success carries decline_code: %s", first.Body)
	}

	// The same payload, written differently, is the same request.
	reordered := `{ "reference": "pay_1", "customer_id": "cus_1", "currency": "EUR", "amount": 1250 }`
	for i, b := range []string{body, reordered} {
		again := postCharge(t, s, "key-1", b)
		if again.Status != first.Status || !bytes.Equal(again.Body, first.Body) {
			t.Errorf("replay %d: %d %s, want %d %s", i, again.Status, again.Body, first.Status, first.Body)
		}
		if h := again.Header.Get("Idempotent-Replayed"); h != "true" {
			t.Errorf("replay %d: Idempotent-Replayed = %q, want true", i, h)
		}
	}

	l := readLedger(t, s, "")
	if diff := cmp.Diff([]string{"charged", "replayed", "replayed"}, outcomes(l.Calls)); diff != "" {
		t.Errorf("call outcomes (-want +got):\n%s", diff)
	}
	if len(l.Charges) != 1 || l.Charges[0].ID != got.ID || l.Charges[0].IdempotencyKey != "key-1" || l.Charges[0].Amount != 1250 {
		t.Errorf("charges = %+v, want one: %s for key-1", l.Charges, got.ID)
	}
	if !l.Charges[0].CreatedAt.Equal(got.CreatedAt) {
		t.Errorf("ledger created_at %v, answered %v", l.Charges[0].CreatedAt, got.CreatedAt)
	}
	for _, c := range l.Calls {
		if deref(c.ChargeID) != got.ID || deref(c.HTTPStatus) != 201 || deref(c.IdempotencyKey) != "key-1" || deref(c.Reference) != "pay_1" {
			t.Errorf("call %+v: want charge %s, status 201, key-1, pay_1", c, got.ID)
		}
	}
}

func TestChargeKeyReusedWithOtherPayload(t *testing.T) {
	t.Parallel()
	s := psptest.Start(t, psptest.Knobs())
	first := postCharge(t, s, "key-1", chargeBody(1000, "cus_1", "pay_1"))
	if first.Status != http.StatusCreated {
		t.Fatalf("first: %d %s", first.Status, first.Body)
	}
	for _, other := range []string{
		chargeBody(1001, "cus_1", "pay_1"),
		chargeBody(1000, "cus_2", "pay_1"),
		chargeBody(1000, "cus_1", "pay_2"),
		`{"amount":1000,"currency":"USD","customer_id":"cus_1","reference":"pay_1"}`,
	} {
		p := wantProblem(t, postCharge(t, s, "key-1", other), http.StatusUnprocessableEntity)
		if !strings.HasSuffix(p.Type, "idempotency-key-mismatch") {
			t.Errorf("type = %q", p.Type)
		}
	}
	// The original is still there for its own payload.
	if again := postCharge(t, s, "key-1", chargeBody(1000, "cus_1", "pay_1")); !bytes.Equal(again.Body, first.Body) {
		t.Errorf("replay after mismatches: %s, want %s", again.Body, first.Body)
	}
	l := readLedger(t, s, "")
	if diff := cmp.Diff([]string{"charged", "mismatch", "mismatch", "mismatch", "mismatch", "replayed"}, outcomes(l.Calls)); diff != "" {
		t.Errorf("call outcomes (-want +got):\n%s", diff)
	}
	if len(l.Charges) != 1 {
		t.Errorf("%d charges, want 1", len(l.Charges))
	}
	if c := l.Calls[1]; c.ChargeID != nil || deref(c.HTTPStatus) != 422 {
		t.Errorf("mismatch call %+v: want no charge id, status 422", c)
	}
}

func TestConcurrentCallsWithOneKeyChargeOnce(t *testing.T) {
	t.Parallel()
	k := psptest.Knobs()
	k.LatencyMS, k.LatencyJitterMS = 5, 5 // spread the arrivals a little
	s := psptest.Start(t, k)
	body := chargeBody(5000, "cus_1", "pay_race")

	const n = 20
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { answers[i] = postCharge(t, s, "race-key", body) })
	}
	wg.Wait()

	fresh := 0
	for i, a := range answers {
		if a.Status != http.StatusCreated || !bytes.Equal(a.Body, answers[0].Body) {
			t.Errorf("answer %d: %d %s, want 201 %s", i, a.Status, a.Body, answers[0].Body)
		}
		if a.Header.Get("Idempotent-Replayed") != "true" {
			fresh++
		}
	}
	if fresh != 1 {
		t.Errorf("%d answers were not replays, want exactly 1", fresh)
	}
	sum := readSummary(t, s)
	if sum.Charges != 1 || sum.CallsByOutcome[charge.OutcomeCharged] != 1 || sum.CallsByOutcome[charge.OutcomeReplayed] != n-1 {
		t.Errorf("summary = %+v, want 1 charge, 1 charged call, %d replayed", sum, n-1)
	}
}

func TestDeclines(t *testing.T) {
	t.Parallel()
	s := psptest.Start(t, psptest.Knobs())
	tests := []struct {
		name     string
		customer string
		amount   int64
		code     string
	}{
		{"customer_id starts with decline", "decline_cus_7", 1000, "card_declined"},
		{"amount is 402", "cus_7", 402, "insufficient_funds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, ref := "decline-key-"+tt.code, "pay_decline_"+tt.code
			body := chargeBody(tt.amount, tt.customer, ref)
			first := postCharge(t, s, key, body)
			if first.Status != http.StatusPaymentRequired {
				t.Fatalf("status %d %s, want 402", first.Status, first.Body)
			}
			got := decodeJSON[charge.Charge](t, first)
			if got.Status != "declined" || got.DeclineCode != tt.code || !strings.HasPrefix(got.ID, "ch_") || got.Amount != tt.amount {
				t.Errorf("decline = %+v, want declined/%s", got, tt.code)
			}
			again := postCharge(t, s, key, body)
			if again.Status != http.StatusPaymentRequired || !bytes.Equal(again.Body, first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("replay: %d %q %s, want 402, replayed, %s", again.Status, again.Header.Get("Idempotent-Replayed"), again.Body, first.Body)
			}
			l := readLedger(t, s, ref)
			if len(l.Charges) != 0 {
				t.Errorf("a decline made charges: %+v", l.Charges)
			}
			if diff := cmp.Diff([]string{"declined", "replayed"}, outcomes(l.Calls)); diff != "" {
				t.Errorf("call outcomes (-want +got):\n%s", diff)
			}
			for _, c := range l.Calls {
				if deref(c.HTTPStatus) != 402 || deref(c.ChargeID) != got.ID {
					t.Errorf("call %+v: want 402 and charge id %s", c, got.ID)
				}
			}
		})
	}
}
