package charge

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
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

// untouchable fails the test if the handler goes past the boundary.
type untouchable struct{ t *testing.T }

func (u untouchable) Charge(context.Context, string, pspclient.ChargeRequest) (pspclient.Charge, error) {
	u.t.Error("psp called without the boundary")
	return pspclient.Charge{}, nil
}
func (u untouchable) Get(context.Context, string) (payments.Payment, error) {
	u.t.Error("payment read without the boundary")
	return payments.Payment{}, nil
}
func (u untouchable) Settle(context.Context, string, payments.Outcome) (bool, error) {
	u.t.Error("payment written without the boundary")
	return false, nil
}
func (u untouchable) RecordTakeover(context.Context, string, int, string) error { return nil }

// With Redis unreachable the handler fails closed: nothing is read, charged
// or written, and the message goes to a delayed retry.
func TestHandlerFailsClosedWithoutRedis(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(Deps{
		Boundary: boundaryOf(idem.New(rdb, idem.Config{Timeout: 200 * time.Millisecond})),
		Payments: untouchable{t}, PSP: untouchable{t}, PSPTimeout: time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: m,
	})
	outcome, err := h.Handle(context.Background(), goodMessage())
	if outcome != metrics.RedisDown || !errors.Is(err, idem.ErrUnavailable) {
		t.Errorf("Handle = %q, %v; want redis_unavailable wrapping idem.ErrUnavailable", outcome, err)
	}
}

// With Redis out of memory (maxmemory reached, policy noeviction) the charge
// stage cannot be claimed: the handler fails closed as without Redis,
// nothing is read, charged or written, and the message goes to a delayed
// retry (not acked, not dead-lettered).
func TestHandlerFailsClosedOnAFullRedis(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	srv.Fill()
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(Deps{
		Boundary: boundaryOf(idem.New(srv.Client(), idem.Config{Timeout: time.Second})),
		Payments: untouchable{t}, PSP: untouchable{t}, PSPTimeout: time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: m,
	})
	outcome, err := h.Handle(context.Background(), goodMessage())
	if outcome != metrics.RedisDown || !errors.Is(err, idem.ErrFull) || !errors.Is(err, idem.ErrUnavailable) {
		t.Errorf("Handle = %q, %v; want redis_unavailable wrapping idem.ErrFull (and idem.ErrUnavailable)", outcome, err)
	}
	if err != nil && !strings.HasPrefix(err.Error(), "retry after") { // consumer.Retry's error
		t.Errorf("Handle returned %v, want a consumer.Retry", err)
	}
}

// An undecodable message is dead-lettered before the boundary is touched.
func TestHandlerRejectsUndecodable(t *testing.T) {
	m, _ := metrics.New(prometheus.NewRegistry())
	h := NewHandler(Deps{Payments: untouchable{t}, PSP: untouchable{t},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: m})
	msg := goodMessage()
	msg.Body = []byte("nope")
	outcome, err := h.Handle(context.Background(), msg)
	if outcome != metrics.DeadLettered || !errors.Is(err, ErrUndecodable) {
		t.Errorf("Handle = %q, %v; want dead_lettered wrapping ErrUndecodable", outcome, err)
	}
}
