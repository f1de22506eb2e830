// Package httpapi is the simulator's HTTP interface: POST /v1/charges on
// the charges port (NewServer), and the admin endpoints for fault knobs and
// the ledger on an admin listener of their own, behind a bearer token
// (NewAdminServer). Health and metrics are on the ops listener
// (pkg/service/ops), never here.
//
// Every route is in routes.go; JSON decoding and validation are in json.go,
// the mapping of errors to problem+json answers in problem.go.
package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/oncepay/oncepay/pkg/service/trace"

	"github.com/oncepay/oncepay/services/psp/internal/faults"
	"github.com/oncepay/oncepay/services/psp/internal/ledger"
)

// Deps are what the server needs. All fields are required.
type Deps struct {
	Logger  *slog.Logger
	Store   *ledger.Store
	Faults  *faults.Injector
	Metrics *Metrics
}

// NewServer returns the simulator's HTTP handler. It is safe for concurrent
// use. When tracing is on (the caller wraps it in trace.Tracing.Handler),
// a request's span is named by its route and carries the merchant and
// idempotency key its caller put in the baggage.
func NewServer(d Deps) http.Handler {
	r := chi.NewRouter()
	r.Use(trace.Route(routePattern), trace.KeyFromBaggage, requestID, observe(d.Logger, d.Metrics), recoverPanics(d.Logger))
	addRoutes(r, d)
	return r
}

// NewAdminServer returns the handler of the admin listener: /admin/config
// and /admin/ledger[/summary], every request answered 401 unless it carries
// Authorization: Bearer <token>. token must not be empty (NewAdminServer
// panics: an admin API open to anyone is a configuration error). It is
// safe for concurrent use.
func NewAdminServer(d Deps, token string) http.Handler {
	if token == "" {
		panic("httpapi: NewAdminServer with an empty token")
	}
	r := chi.NewRouter()
	r.Use(requestID, observe(d.Logger, d.Metrics), recoverPanics(d.Logger))
	addAdminRoutes(r, d, token)
	return r
}
