package pspclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/oncepay/oncepay/services/psp/internal/faults"
	"github.com/oncepay/oncepay/services/psp/internal/psptest"
	"github.com/oncepay/oncepay/services/psp/pspclient"
)

func start(t *testing.T, k faults.Knobs) (*pspclient.Client, *psptest.Server) {
	t.Helper()
	s := psptest.Start(t, k)
	return pspclient.New(s.URL, &http.Client{Timeout: 10 * time.Second}), s
}

// admin is a client of s's admin listener, with its token.
func admin(s *psptest.Server) *pspclient.Client {
	return pspclient.NewAdmin(s.AdminURL, s.AdminToken, &http.Client{Timeout: 10 * time.Second})
}

var req = pspclient.ChargeRequest{Amount: 4200, Currency: "EUR", CustomerID: "cus_1", Reference: "pay_1"}

func TestChargeAndReplay(t *testing.T) {
	t.Parallel()
	c, _ := start(t, psptest.Knobs())
	ctx := t.Context()
	first, err := c.Charge(ctx, "k1", req)
	if err != nil {
		t.Fatal(err)
	}
	want := pspclient.Charge{Status: pspclient.StatusSucceeded, Amount: 4200, Currency: "EUR", CustomerID: "cus_1", Reference: "pay_1"}
	if diff := cmp.Diff(want, first, cmpopts.IgnoreFields(pspclient.Charge{}, "ID", "CreatedAt")); diff != "" {
		t.Errorf("first (-want +got):\n%s", diff)
	}
	again, err := c.Charge(ctx, "k1", req)
	if err != nil {
		t.Fatal(err)
	}
	first.Replayed = true
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("replay (-want +got):\n%s", diff)
	}
}

func TestDeclineIsNotAnError(t *testing.T) {
	t.Parallel()
	c, _ := start(t, psptest.Knobs())
	declined := req
	declined.CustomerID = "decline_me"
	got, err := c.Charge(t.Context(), "k1", declined)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != pspclient.StatusDeclined || got.DeclineCode != "card_declined" || got.ID == "" {
		t.Errorf("decline = %+v", got)
	}
}

func TestChargeErrors(t *testing.T) {
	t.Parallel()
	c, s := start(t, psptest.Knobs())
	ctx := t.Context()
	if _, err := c.Charge(ctx, "k1", req); err != nil {
		t.Fatal(err)
	}

	other := req
	other.Amount++
	_, err := c.Charge(ctx, "k1", other)
	if !errors.Is(err, pspclient.ErrMismatch) || !errors.Is(err, pspclient.ErrRejected) || errors.Is(err, pspclient.ErrTransient) {
		t.Errorf("mismatch: err = %v, want ErrMismatch and ErrRejected, not ErrTransient", err)
	}

	_, err = c.Charge(ctx, "", pspclient.ChargeRequest{Amount: -1, Currency: "eur"})
	var perr *pspclient.Error
	if !errors.As(err, &perr) || !errors.Is(err, pspclient.ErrRejected) || errors.Is(err, pspclient.ErrTransient) || errors.Is(err, pspclient.ErrMismatch) {
		t.Fatalf("bad request: err = %v, want an *Error wrapping ErrRejected only", err)
	}
	if perr.StatusCode != 400 || len(perr.Errors) != 5 {
		t.Errorf("bad request: %+v, want 400 with 5 field errors", perr)
	}
	if got := perr.Reason(); !strings.HasPrefix(got, "invalid-request: Idempotency-Key ") || !strings.Contains(got, "; amount ") {
		t.Errorf("Reason() = %q, want the problem type, then each field's problem", got)
	}

	if _, err := s.Faults.Update(faults.Patch{RejectRate: new(1.0)}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Charge(ctx, "k-rejected", req)
	if !errors.As(err, &perr) || !errors.Is(err, pspclient.ErrRejected) || errors.Is(err, pspclient.ErrTransient) {
		t.Fatalf("reject_rate 1: err = %v, want an *Error wrapping ErrRejected", err)
	}
	if got := perr.Reason(); !strings.HasPrefix(got, "charge-rejected: injected fault (reject_rate)") {
		t.Errorf("Reason() = %q, want charge-rejected and the detail", got)
	}
	if _, err := s.Faults.Update(faults.Patch{RejectRate: new(0.0)}); err != nil {
		t.Fatal(err)
	}

	for _, p := range []faults.Patch{{FailBeforeRate: new(1.0)}, {ErrorRate: new(1.0)}} {
		if _, err := s.Faults.Update(p); err != nil {
			t.Fatal(err)
		}
		_, err = c.Charge(ctx, "k2", req)
		if !errors.As(err, &perr) || !errors.Is(err, pspclient.ErrTransient) || perr.StatusCode < 500 {
			t.Errorf("%+v: err = %v, want a 5xx *Error wrapping ErrTransient", p, err)
		}
		if _, err := s.Faults.Update(faults.Patch{FailBeforeRate: new(0.0), ErrorRate: new(0.0)}); err != nil {
			t.Fatal(err)
		}
	}

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := s.Faults.Update(faults.Patch{LatencyMS: new(int64(2000))}); err != nil {
		t.Fatal(err)
	}
	if _, err = c.Charge(short, "k3", req); !errors.Is(err, pspclient.ErrTransient) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timeout: err = %v, want ErrTransient and DeadlineExceeded", err)
	}

	_, err = pspclient.New("http://127.0.0.1:1", nil).Charge(ctx, "k4", req)
	if !errors.Is(err, pspclient.ErrTransient) {
		t.Errorf("connection refused: err = %v, want ErrTransient", err)
	}
}

// TestFailAfterIsTransientAndTheRetryReturnsTheCharge is the ambiguous
// timeout: the psp charged and dropped the connection. The client must see
// ErrTransient, even on a reused keep-alive connection where net/http would
// otherwise resend a request carrying an Idempotency-Key by itself.
func TestFailAfterIsTransientAndTheRetryReturnsTheCharge(t *testing.T) {
	t.Parallel()
	c, s := start(t, psptest.Knobs())
	a := admin(s)
	ctx := t.Context()
	if _, err := c.Charge(ctx, "warm-up", req); err != nil { // leaves an idle keep-alive connection
		t.Fatal(err)
	}
	if _, err := a.SetConfig(ctx, pspclient.ConfigPatch{FailAfterRate: new(1.0)}); err != nil {
		t.Fatal(err)
	}
	r := req
	r.Reference = "pay_ambiguous"
	_, err := c.Charge(ctx, "k-ambiguous", r)
	if !errors.Is(err, pspclient.ErrTransient) {
		t.Fatalf("fail_after: err = %v, want ErrTransient", err)
	}
	t.Logf("fail_after error: %v", err)

	l, err := a.Ledger(ctx, "pay_ambiguous")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Charges) != 1 || len(l.Calls) != 1 || l.Calls[0].Outcome != pspclient.OutcomeFailAfter || l.Calls[0].HTTPStatus != 0 {
		t.Fatalf("ledger after fail_after = %+v, want one fail_after call with no status and one charge", l)
	}
	got, err := c.Charge(ctx, "k-ambiguous", r)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != l.Charges[0].ID || !got.Replayed {
		t.Errorf("retry = %+v, want the stored charge %s, replayed", got, l.Charges[0].ID)
	}
	if sum, err := a.Summary(ctx); err != nil || sum.Charges != 2 {
		t.Errorf("summary = %+v, %v; want 2 charges (warm-up and the ambiguous one)", sum, err)
	}
}

func TestAdmin(t *testing.T) {
	t.Parallel()
	c, s := start(t, psptest.Knobs())
	a := admin(s)
	ctx := t.Context()

	cfg, err := a.SetConfig(ctx, pspclient.ConfigPatch{LatencyMS: new(int64(3)), Idempotency: new(false), Seed: new(int64(77))})
	if err != nil {
		t.Fatal(err)
	}
	want := pspclient.Config{LatencyMS: 3, Idempotency: false, Seed: 77}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("SetConfig (-want +got):\n%s", diff)
	}
	if got, err := a.Config(ctx); err != nil || !cmp.Equal(want, got) {
		t.Errorf("Config = %+v, %v; want %+v", got, err, want)
	}
	_, err = a.SetConfig(ctx, pspclient.ConfigPatch{ErrorRate: new(1.5), FailAfterRate: new(-1.0), LatencyMS: new(int64(-1))})
	var perr *pspclient.Error
	if !errors.As(err, &perr) || perr.StatusCode != 400 || len(perr.Errors) != 3 {
		t.Errorf("bad SetConfig: err = %v, want 400 listing 3 problems", err)
	}

	for range 2 {
		if _, err := c.Charge(ctx, "dup", req); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := a.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Calls != 2 || sum.Charges != 2 || sum.CallsByOutcome[pspclient.OutcomeCharged] != 2 || !cmp.Equal(sum.ReferencesChargedMoreThanOnce, []string{"pay_1"}) {
		t.Errorf("summary with idempotency off = %+v", sum)
	}
	l, err := a.Ledger(ctx, "")
	if err != nil || len(l.Calls) != 2 || len(l.Charges) != 2 || l.Calls[0].IdempotencyKey != "dup" || l.Charges[1].CustomerID != "cus_1" {
		t.Errorf("ledger = %+v, %v", l, err)
	}
	if err := a.ResetLedger(ctx); err != nil {
		t.Fatal(err)
	}
	if sum, err := a.Summary(ctx); err != nil || sum.Calls != 0 || sum.Charges != 0 || len(sum.ReferencesChargedMoreThanOnce) != 0 {
		t.Errorf("after reset: %+v, %v", sum, err)
	}
}

func TestErrorFromANonProblemAnswer(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
	}))
	t.Cleanup(hs.Close)
	_, err := pspclient.New(hs.URL, nil).Charge(t.Context(), "k", req)
	var perr *pspclient.Error
	if !errors.Is(err, pspclient.ErrTransient) || !errors.As(err, &perr) || perr.StatusCode != 502 || perr.Title != "Bad Gateway" {
		t.Errorf("err = %v (%+v), want a transient 502 Bad Gateway", err, perr)
	}
}

func TestAdminNeedsTheToken(t *testing.T) {
	t.Parallel()
	c, s := start(t, psptest.Knobs())
	var perr *pspclient.Error
	if _, err := pspclient.NewAdmin(s.AdminURL, "wrong", nil).Summary(t.Context()); !errors.As(err, &perr) || perr.StatusCode != http.StatusUnauthorized {
		t.Errorf("Summary with a wrong token: err = %v, want a 401 *Error", err)
	}
	if _, err := c.Summary(t.Context()); !errors.As(err, &perr) || perr.StatusCode != http.StatusNotFound {
		t.Errorf("Summary on the charges port: err = %v, want a 404 *Error", err)
	}
}
