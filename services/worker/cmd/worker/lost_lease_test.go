package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/services/psp/pspclient"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/oncepay/oncepay/services/worker/internal/charge"
	"github.com/oncepay/oncepay/services/worker/internal/consumer"
	"github.com/oncepay/oncepay/services/worker/internal/metrics"
	"github.com/oncepay/oncepay/services/worker/internal/payments"
)

// stuckPSP is a psp whose charge call hangs until the caller gives up.
type stuckPSP struct{ called chan struct{} }

func (s stuckPSP) Charge(ctx context.Context, _ string, _ pspclient.ChargeRequest) (pspclient.Charge, error) {
	close(s.called)
	<-ctx.Done()
	return pspclient.Charge{}, errors.Join(pspclient.ErrTransient, context.Cause(ctx))
}

// When the lease is lost while the psp call runs (another owner took the
// stage), the handler stops, writes nothing (no payment update, no Complete
// or Release over the new owner) and asks for a delayed retry.
func TestLostLeaseWritesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	opt := testenv.RedisOptions(t, redisDB)
	opt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	psp := stuckPSP{called: make(chan struct{})}
	h := charge.NewHandler(charge.Deps{
		Boundary: charge.IdemBoundary(idem.New(rdb, idem.Config{Lease: 1500 * time.Millisecond, Timeout: time.Second})),
		Payments: payments.New(e.db), PSP: psp, PSPTimeout: 30 * time.Second, Instance: "lost",
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: m,
	})
	p := e.newPayment(900, "cus_lost")
	msg := e.message(p)

	type result struct {
		outcome string
		err     error
	}
	done := make(chan result, 1)
	go func() {
		o, err := h.Handle(context.Background(), consumer.Message{ID: msg.MessageId, Headers: msg.Headers, Body: msg.Body, Attempt: 1})
		done <- result{o, err}
	}()
	select {
	case <-psp.called:
	case r := <-done:
		t.Fatalf("handler returned %q, %v before calling the psp", r.outcome, r.err)
	case <-time.After(10 * time.Second):
		t.Fatal("handler never called the psp")
	}
	hash := "idem:v1:{" + e.merchant + ":" + p.Key + "}"
	if err := e.redis.HSet(context.Background(), hash, "charge:owner", "thief").Err(); err != nil {
		t.Fatal(err)
	}

	var r result
	select {
	case r = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("handler did not notice the lost lease")
	}
	if r.outcome != metrics.LostLease || !errors.Is(r.err, idem.ErrLost) {
		t.Errorf("Handle = %q, %v; want lost_lease wrapping idem.ErrLost", r.outcome, r.err)
	}
	if row := e.row(p.ID); row.Status != "pending" {
		t.Errorf("payment = %+v, want it untouched (pending)", row)
	}
	f, err := e.redis.HMGet(context.Background(), hash, "charge:owner", "charge:state").Result()
	if err != nil {
		t.Fatal(err)
	}
	if f[0] != "thief" || f[1] != "P" {
		t.Errorf("stage = owner %v state %v; the stale owner overwrote the new one", f[0], f[1])
	}
}
