package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func addRoutes(r chi.Router, d Deps) {
	r.Method(http.MethodPost, "/v1/charges", handleCharge(d.Logger, d.Store, d.Faults, d.Metrics))
	r.Method(http.MethodGet, "/v1/charges", handleLookup(d.Logger, d.Store, d.Faults))

	r.Method(http.MethodGet, "/admin/config", handleGetConfig(d.Faults))
	r.Method(http.MethodPut, "/admin/config", handlePutConfig(d.Logger, d.Faults))
	r.Method(http.MethodGet, "/admin/ledger", handleReadLedger(d.Logger, d.Store))
	r.Method(http.MethodDelete, "/admin/ledger", handleResetLedger(d.Logger, d.Store))
	r.Method(http.MethodGet, "/admin/ledger/summary", handleSummary(d.Logger, d.Store))

	r.Method(http.MethodGet, "/livez", handleLivez())
	r.Method(http.MethodGet, "/readyz", handleReadyz(d.Logger, d.Store, d.Draining))
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(d.Gatherer, promhttp.HandlerOpts{}))

	r.NotFound(handleNotFound(d.Logger))
	r.MethodNotAllowed(handleMethodNotAllowed(d.Logger))
}
