package httpapi

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// admit bounds the requests in flight on the routes it wraps to the
// server's door (API_MAX_INFLIGHT; nil: no bound). A request that finds
// every slot taken waits for one, first come first served, for at most the
// door's wait (API_MAX_INFLIGHT_WAIT) and only while fewer than
// API_MAX_INFLIGHT others wait; otherwise it is answered with the
// overloaded 503 (Retry-After: 1, problem type unavailable) and counted in
// http_requests_shed_total. A refused request touches neither the
// idempotency boundary nor Postgres, so its Idempotency-Key is not
// consumed and the client retries with the same key. A slot is held until
// the handler returns: on its answer, a panic, or the client hanging up
// (the handler's work ends with the request's context).
//
// Shedding here, before any work, keeps what a replica holds at once, its
// memory and its answers' latency bounded however much load arrives; the
// excess costs one fast refusal each instead of queueing behind the
// admitted requests until their timeouts. The short wait hands a slot
// that frees up to a request already there instead of refusing it, so a
// door sized to what saturates the replica keeps it busy through bursts.
func (s *Server) admit(next http.Handler) http.Handler {
	if s.door == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.door.enter(r.Context()) {
			s.metrics.HTTPShed.Inc()
			s.writeError(w, r, overloaded())
			return
		}
		defer s.door.leave()
		s.metrics.HTTPInFlight.Inc()
		defer s.metrics.HTTPInFlight.Dec()
		next.ServeHTTP(w, r)
	})
}

// door is admit's bound: limit slots, and a queue of at most limit
// requests that wait up to wait each for a slot (FIFO: semaphore.Weighted
// serves its waiters in order and lets no newcomer pass them).
type door struct {
	slots   *semaphore.Weighted
	wait    time.Duration
	limit   int64
	waiting atomic.Int64 // requests in enter's wait
}

// newDoor returns the door of a bound of limit requests in flight, each
// refused one having waited at most wait (0: refused at once); nil (no
// bound) when limit is not positive.
func newDoor(limit int, wait time.Duration) *door {
	if limit <= 0 {
		return nil
	}
	return &door{slots: semaphore.NewWeighted(int64(limit)), wait: wait, limit: int64(limit)}
}

// enter takes a slot and reports true, or reports false when none freed
// up within the wait, the queue was full, or ctx ended first. A caller
// that got true calls leave when done.
func (d *door) enter(ctx context.Context) bool {
	if d.slots.TryAcquire(1) {
		return true
	}
	if d.wait <= 0 {
		return false
	}
	defer d.waiting.Add(-1)
	if d.waiting.Add(1) > d.limit {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, d.wait)
	defer cancel()
	return d.slots.Acquire(ctx, 1) == nil
}

// leave gives back the slot of a request that entered.
func (d *door) leave() { d.slots.Release(1) }
