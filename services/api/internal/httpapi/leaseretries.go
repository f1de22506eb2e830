package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/services/api/internal/metrics"
)

// errShutdown ends the background retries when the shutdown grace runs out.
var errShutdown = errors.New("shutdown grace over")

// LeaseRetries ends, in the background, the leases whose Complete or
// Release Redis did not answer while the request was being answered (a
// restart, LOADING, a timeout). The answer is not held back for it: the
// payment is committed, and the client gets its answer at once. Without
// the retry, the api stage would stay PENDING until a client retry took it
// over after the lease, or for the whole retention if none came.
//
// Each retry runs idem.Retry for up to the configured time and stops at
// ErrLost (another request took the key over after the lease and answered
// from the database). Shutdown waits for the retries within the grace and
// then abandons them. It is safe for concurrent use.
type LeaseRetries struct {
	log     *slog.Logger
	metrics *metrics.Metrics
	limit   time.Duration

	ctx    context.Context // ends when Shutdown gives up waiting
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	closed  bool
	running sync.WaitGroup
}

// NewLeaseRetries returns a LeaseRetries that retries each call for up to
// limit (zero: no retry, the failure is only counted).
func NewLeaseRetries(log *slog.Logger, m *metrics.Metrics, limit time.Duration) *LeaseRetries {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &LeaseRetries{log: log, metrics: m, limit: limit, ctx: ctx, cancel: cancel}
}

// Go retries end, the Complete or Release (op) of key's api stage that
// just failed with idem.ErrUnavailable, in a goroutine of its own, and
// logs and counts how that ends. After Shutdown has begun it only counts
// the failure.
func (r *LeaseRetries) Go(key idem.Key, op idem.Op, end func(context.Context) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.limit <= 0 {
		r.metrics.IdemLeaseEndRetries.WithLabelValues(string(op), metrics.EndGaveUp).Inc()
		r.log.Warn("boundary: stage not ended in Redis; it stays pending until its lease runs out and a retry takes it over",
			"key", key.String(), "op", op)
		return
	}
	r.running.Go(func() {
		start := time.Now()
		err := idem.Retry(r.ctx, idem.Backoff{Limit: r.limit}, end)
		log := r.log.With("key", key.String(), "op", op, "took", time.Since(start).Round(time.Millisecond).String())
		switch {
		case err == nil:
			r.metrics.IdemLeaseEndRetries.WithLabelValues(string(op), metrics.EndRecovered).Inc()
			log.Info("boundary: stage ended in Redis after a retry")
		case errors.Is(err, idem.ErrLost):
			r.metrics.IdemLeaseEndRetries.WithLabelValues(string(op), metrics.EndLost).Inc()
			log.Info("boundary: another request took the key over before the retry got through", "err", err)
		default:
			r.metrics.IdemLeaseEndRetries.WithLabelValues(string(op), metrics.EndGaveUp).Inc()
			log.Warn("boundary: gave up ending the stage in Redis; it stays pending until its lease runs out and a retry takes it over", "err", err)
		}
	})
}

// Shutdown stops new retries, waits for the running ones until ctx ends,
// then makes them give up and waits until they have returned (each is
// bounded by the boundary's timeout). It returns ctx's error if it had to
// abandon retries.
func (r *LeaseRetries) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		r.running.Wait()
		close(done)
	}()
	select {
	case <-done:
		r.cancel(nil)
		return nil
	case <-ctx.Done():
		r.cancel(errShutdown)
		<-done
		return ctx.Err()
	}
}
