package httpapi

import (
	"math"
	"net/http"
	"strconv"

	"golang.org/x/time/rate"
)

// RateLimits limits each merchant's requests with a token bucket of its own
// (golang.org/x/time/rate): perSecond tokens a second, up to burst at once.
// The buckets are made for the configured merchants up front, so no request
// can add one. It is safe for concurrent use; each api instance limits on its
// own.
type RateLimits struct {
	buckets map[string]*rate.Limiter
}

// NewRateLimits returns the limits of merchants, or nil (no limit) when
// perSecond is not positive.
func NewRateLimits(merchants []string, perSecond float64, burst int) *RateLimits {
	if perSecond <= 0 {
		return nil
	}
	l := &RateLimits{buckets: make(map[string]*rate.Limiter, len(merchants))}
	for _, m := range merchants {
		l.buckets[m] = rate.NewLimiter(rate.Limit(perSecond), max(burst, 1))
	}
	return l
}

// limit answers 429 with Retry-After (whole seconds, at least 1) when the
// authenticated merchant has no token left. It runs after authenticate and
// before any handler, so a refused request touches neither the idempotency
// boundary nor Postgres: its Idempotency-Key is not consumed.
func (s *Server) limit(next http.Handler) http.Handler {
	if s.limits == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bucket := s.limits.buckets[merchantFrom(r.Context())]
		if bucket != nil {
			res := bucket.Reserve()
			if delay := res.Delay(); delay > 0 {
				res.Cancel()
				secs := int(math.Ceil(delay.Seconds()))
				s.writeError(w, r, newProblem(http.StatusTooManyRequests, "rate-limited", "Too many requests",
					"this merchant's request rate is over its limit; retry after the Retry-After delay").
					with("Retry-After", strconv.Itoa(max(secs, 1))))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
