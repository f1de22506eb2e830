package httpapi

import (
	"net/http"

	"golang.org/x/sync/semaphore"
)

// admit bounds the requests in flight on the routes it wraps to the
// server's maxInFlight (API_MAX_INFLIGHT; nil: no bound). A request that
// finds every slot taken is answered at once with the overloaded 503
// (Retry-After: 1, problem type unavailable) and counted in
// http_requests_shed_total: it never waits, and touches neither the
// idempotency boundary nor Postgres, so its Idempotency-Key is not
// consumed and the client retries with the same key. A slot is held until
// the handler returns: on its answer, a panic, or the client hanging up
// (the handler's work ends with the request's context).
//
// Shedding here, before any work, keeps what a replica holds at once, its
// memory and its answers' latency bounded however much load arrives; the
// excess costs one fast refusal each instead of queueing behind the
// admitted requests until their timeouts.
func (s *Server) admit(next http.Handler) http.Handler {
	if s.inFlight == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.inFlight.TryAcquire(1) {
			s.metrics.HTTPShed.Inc()
			s.writeError(w, r, overloaded())
			return
		}
		defer s.inFlight.Release(1)
		s.metrics.HTTPInFlight.Inc()
		defer s.metrics.HTTPInFlight.Dec()
		next.ServeHTTP(w, r)
	})
}

// newInFlight returns the slots of admit for a bound of limit requests,
// nil (no bound) when limit is not positive.
func newInFlight(limit int) *semaphore.Weighted {
	if limit <= 0 {
		return nil
	}
	return semaphore.NewWeighted(int64(limit))
}
