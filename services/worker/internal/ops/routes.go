package ops

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func addRoutes(mux *http.ServeMux, d Deps) {
	mux.Handle("GET /livez", handleLivez())
	mux.Handle("GET /readyz", handleReadyz(d.Log, d.Checks, d.Draining, d.Details))
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.Gatherer, promhttp.HandlerOpts{}))
}
