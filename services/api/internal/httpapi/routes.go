package httpapi

import (
	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// routes registers every route of the api.
func (s *Server) routes() {
	s.mux.Use(s.observe, s.recoverer)
	s.mux.NotFound(s.handle(s.notFound))
	s.mux.MethodNotAllowed(s.handle(s.methodNotAllowed))

	s.mux.Get("/livez", s.livez)
	s.mux.Get("/readyz", s.readyz)
	s.mux.Method("GET", "/metrics", promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{}))

	s.mux.Route("/v1", func(r chi.Router) {
		r.Use(s.authenticate)
		r.Post("/payments", s.handle(s.createPayment))
		r.Get("/payments/{id}", s.handle(s.getPayment))
	})
}
