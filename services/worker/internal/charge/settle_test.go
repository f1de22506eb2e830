package charge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/services/psp/pspclient"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/oncepay/oncepay/services/worker/internal/metrics"
	"github.com/oncepay/oncepay/services/worker/internal/payments"
)

// These tests stop a private redis-server (with its data kept) while the
// handler ends its lease, the way a Redis restart does in the fault demo.
// Before the fix, the stage stayed PENDING past its lease and nobody ever
// claimed it again.

// memPayments is the payments table in memory, with the same
// compare-and-set as the real one.
type memPayments struct {
	mu sync.Mutex
	p  payments.Payment
}

func (m *memPayments) Get(_ context.Context, id string) (payments.Payment, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id != m.p.ID {
		return payments.Payment{}, payments.ErrNotFound
	}
	return m.p, nil
}

func (m *memPayments) Settle(_ context.Context, id string, o payments.Outcome) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id != m.p.ID || m.p.Terminal() {
		return false, nil
	}
	m.p.Outcome = o
	return true, nil
}

func (m *memPayments) RecordTakeover(context.Context, string, int, string) error { return nil }

// pspDuringOutage charges (or fails with a transient error) and, in the
// call, starts a Redis outage of the given length.
type pspDuringOutage struct {
	srv    *testenv.RedisServer
	outage time.Duration
	fail   bool

	mu    sync.Mutex
	calls int
	back  <-chan struct{}
}

func (p *pspDuringOutage) Charge(context.Context, string, pspclient.ChargeRequest) (pspclient.Charge, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.calls == 1 {
		p.back = p.srv.Outage(p.outage)
	}
	if p.fail {
		return pspclient.Charge{}, fmt.Errorf("psp: %w: 503", pspclient.ErrTransient)
	}
	return pspclient.Charge{ID: "ch_1", Status: pspclient.StatusSucceeded}, nil
}

// waitBack waits until Redis answers again after the outage.
func (p *pspDuringOutage) waitBack(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	back := p.back
	p.mu.Unlock()
	if back == nil {
		t.Fatal("the psp was not called, so Redis was never stopped")
	}
	<-back
}

type settleFixture struct {
	logs *lockedBuffer // the handler's log
	srv  *testenv.RedisServer
	rdb  *redis.Client
	reg  *prometheus.Registry
	pays *memPayments
	psp  *pspDuringOutage
	h    *Handler
}

func newSettleFixture(t *testing.T, lease, endRetry, outage time.Duration, pspFails bool) *settleFixture {
	t.Helper()
	srv := testenv.StartRedis(t)
	f := &settleFixture{logs: &lockedBuffer{}, srv: srv, rdb: srv.Client(), reg: prometheus.NewRegistry(),
		psp: &pspDuringOutage{srv: srv, outage: outage, fail: pspFails}}
	m, err := metrics.New(f.reg)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := Decode(goodMessage())
	if err != nil {
		t.Fatal(err)
	}
	f.pays = &memPayments{p: payments.Payment{ID: msg.PaymentID, MerchantID: msg.MerchantID, IdempotencyKey: msg.IdempotencyKey,
		Amount: msg.Amount, Currency: msg.Currency, CustomerID: msg.CustomerID, Outcome: payments.Outcome{Status: payments.Pending}}}
	store := idem.New(f.rdb, idem.Config{Lease: lease, Timeout: 200 * time.Millisecond, Observe: m.Boundary})
	f.h = NewHandler(Deps{
		Boundary: boundaryOf(store), Payments: f.pays, PSP: f.psp, PSPTimeout: time.Second, EndRetry: endRetry,
		Instance: "test", Log: slog.New(slog.NewTextHandler(f.logs, nil)), Metrics: m,
	})
	return f
}

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// logged reports whether a line of the handler's log contains every sub.
func (f *settleFixture) logged(subs ...string) bool {
	for line := range strings.Lines(f.logs.String()) {
		found := true
		for _, s := range subs {
			found = found && strings.Contains(line, s)
		}
		if found {
			return true
		}
	}
	return false
}

// stage returns the charge stage's fields in the boundary hash.
func (f *settleFixture) stage(t *testing.T) (state, result string) {
	t.Helper()
	msg, _ := Decode(goodMessage())
	v, err := f.rdb.HMGet(context.Background(), msg.Key().String(), Stage+":state", Stage+":result").Result()
	if err != nil {
		t.Fatal(err)
	}
	state, _ = v[0].(string)
	result, _ = v[1].(string)
	return state, result
}

// endRetries returns idem_lease_end_retries_total{op, result}.
func (f *settleFixture) endRetries(t *testing.T, op, result string) float64 {
	t.Helper()
	families, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		if fam.GetName() != "idem_lease_end_retries_total" {
			continue
		}
		for _, m := range fam.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["op"] == op && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// Redis goes away right after the charge and is back within the in-process
// retry: the stage is completed with the payment's outcome and the message
// acked.
func TestCompleteRetriedThroughRedisRestart(t *testing.T) {
	t.Parallel()
	f := newSettleFixture(t, 10*time.Second, 10*time.Second, time.Second, false)
	outcome, err := f.h.Handle(context.Background(), goodMessage())
	if outcome != metrics.Charged || err != nil {
		t.Fatalf("Handle = %q, %v; want charged, nil (ack)", outcome, err)
	}
	f.psp.waitBack(t)
	want := string(resultOf("pay_1", payments.Outcome{Status: payments.Succeeded, PSPChargeID: "ch_1"}))
	if state, result := f.stage(t); state != "C" || result != want {
		t.Errorf("charge stage = %q with result %s, want C with %s", state, result, want)
	}
	if got := f.endRetries(t, "complete", "recovered"); got != 1 {
		t.Errorf("idem_lease_end_retries_total{op=complete,result=recovered} = %v, want 1", got)
	}
	for _, line := range []string{"boundary unavailable; retrying", "boundary answered again"} {
		if !f.logged(line, "payment_id=pay_1") {
			t.Errorf("no log line %q names the payment:\n%s", line, f.logs)
		}
	}
}

// Redis stays away longer than the in-process retry: the message is NOT
// acked but sent to a delayed retry. Its next delivery, after the lease,
// takes the stage over, finds the payment terminal in the database and
// completes the stage from it, without charging again.
func TestCompleteDeferredToADelayedRetry(t *testing.T) {
	t.Parallel()
	const lease = time.Second
	f := newSettleFixture(t, lease, 300*time.Millisecond, 2*time.Second, false)
	outcome, err := f.h.Handle(context.Background(), goodMessage())
	if err == nil || !errors.Is(err, idem.ErrUnavailable) || !strings.HasPrefix(err.Error(), "retry after") {
		t.Fatalf("Handle = %q, %v; want a delayed retry wrapping idem.ErrUnavailable, not an ack", outcome, err)
	}
	if p, _ := f.pays.Get(context.Background(), "pay_1"); p.Status != payments.Succeeded {
		t.Fatalf("payment = %+v, want succeeded", p)
	}
	if got := f.endRetries(t, "complete", "gave_up"); got != 1 {
		t.Errorf("idem_lease_end_retries_total{op=complete,result=gave_up} = %v, want 1", got)
	}
	f.psp.waitBack(t)
	if state, _ := f.stage(t); state != "P" {
		t.Fatalf("charge stage after the outage = %q, want P (pending until the redelivery)", state)
	}
	time.Sleep(lease) // the delayed retry comes back after the lease

	outcome, err = f.h.Handle(context.Background(), goodMessage())
	if outcome != metrics.Duplicate || err != nil {
		t.Fatalf("redelivery: Handle = %q, %v; want duplicate, nil", outcome, err)
	}
	want := string(resultOf("pay_1", payments.Outcome{Status: payments.Succeeded, PSPChargeID: "ch_1"}))
	if state, result := f.stage(t); state != "C" || result != want {
		t.Errorf("charge stage = %q with result %s, want C with %s", state, result, want)
	}
	if f.psp.calls != 1 {
		t.Errorf("psp called %d times, want 1", f.psp.calls)
	}
}

// A transient psp failure while Redis restarts: Release is retried too, so
// the stage is free for the delayed retry instead of PENDING.
func TestReleaseRetriedThroughRedisRestart(t *testing.T) {
	t.Parallel()
	f := newSettleFixture(t, 10*time.Second, 10*time.Second, time.Second, true)
	outcome, err := f.h.Handle(context.Background(), goodMessage())
	if outcome != metrics.TransientRetry || !errors.Is(err, pspclient.ErrTransient) {
		t.Fatalf("Handle = %q, %v; want transient_retry wrapping the psp error", outcome, err)
	}
	f.psp.waitBack(t)
	if state, _ := f.stage(t); state != "" {
		t.Errorf("charge stage = %q, want released (no state)", state)
	}
	if got := f.endRetries(t, "release", "recovered"); got != 1 {
		t.Errorf("idem_lease_end_retries_total{op=release,result=recovered} = %v, want 1", got)
	}
}
