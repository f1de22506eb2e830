package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/oncepay/oncepay/pkg/service/trace"
)

// routes registers every route of the payments port. /livez, /readyz and
// /metrics are not among them: they are on the ops listener (404 here).
func (s *Server) routes() {
	s.mux.Use(trace.Route(routePattern), s.observe, s.recoverer)
	s.mux.NotFound(s.handle(s.notFound))
	s.mux.MethodNotAllowed(s.handle(s.methodNotAllowed))

	// Authentication, the merchant's rate limit, then the bound on
	// requests in flight: an unauthenticated or rate-limited request is
	// answered (401, 429) without taking a slot, so a flood without a key
	// cannot fill them; each check is a hash, a map lookup or a counter,
	// done before any work.
	s.mux.Route("/v1", func(r chi.Router) {
		r.Use(s.authenticate, s.limit, s.admit)
		r.With(s.idem).Post("/payments", s.handle(s.createPayment))
		r.Get("/payments/{id}", s.handle(s.getPayment))
	})
}

// routePattern is the pattern of the route that served r ("" before
// routing), for the request's span name.
func routePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		return rc.RoutePattern()
	}
	return ""
}
