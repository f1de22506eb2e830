package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// addRoutes registers every route of the charges port. /livez, /readyz and
// /metrics are not among them: they are on the ops listener (404 here), and
// neither is /admin/*: it is on the admin listener (404 here).
func addRoutes(r chi.Router, d Deps) {
	r.Method(http.MethodPost, "/v1/charges", handleCharge(d.Logger, d.Store, d.Faults, d.Metrics))
	r.Method(http.MethodGet, "/v1/charges", handleLookup(d.Logger, d.Store, d.Faults))

	r.NotFound(handleNotFound(d.Logger))
	r.MethodNotAllowed(handleMethodNotAllowed(d.Logger))
}

// addAdminRoutes registers every route of the admin listener, each behind
// requireToken(token).
func addAdminRoutes(r chi.Router, d Deps, token string) {
	r.Use(requireToken(d.Logger, token))
	r.Method(http.MethodGet, "/admin/config", handleGetConfig(d.Faults))
	r.Method(http.MethodPut, "/admin/config", handlePutConfig(d.Logger, d.Faults))
	r.Method(http.MethodGet, "/admin/ledger", handleReadLedger(d.Logger, d.Store))
	r.Method(http.MethodDelete, "/admin/ledger", handleResetLedger(d.Logger, d.Store))
	r.Method(http.MethodGet, "/admin/ledger/summary", handleSummary(d.Logger, d.Store))

	r.NotFound(handleNotFound(d.Logger))
	r.MethodNotAllowed(handleMethodNotAllowed(d.Logger))
}

// routePattern is the pattern of the route that served r ("" before
// routing), for the request's span name.
func routePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		return rc.RoutePattern()
	}
	return ""
}
