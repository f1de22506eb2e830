// Package ops serves a service's operational endpoints, /livez, /readyz
// and /metrics, on a listener of their own, never on the port that serves
// clients. Kubernetes probes and Prometheus reach that listener; clients of
// the service do not.
//
// Answers carry no internal detail: /readyz names each dependency and says
// whether it is up, and logs the error of one that is down.
package ops

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// CheckTimeout bounds every readiness check.
const CheckTimeout = time.Second

// Check is one readiness dependency: Fn returns nil when it is usable.
// A Required check that fails makes /readyz answer 503; an optional one is
// reported but keeps the instance in service.
type Check struct {
	Name     string
	Required bool
	Fn       func(ctx context.Context) error
}

// Deps are what the ops handler reports on. Log, Gatherer and Draining are
// required.
type Deps struct {
	Log      *slog.Logger
	Checks   []Check
	Gatherer prometheus.Gatherer // what /metrics exposes
	Draining func() bool         // true once shutdown began: /readyz answers 503
	// Details, if set, are added to every /readyz answer (e.g. a
	// demonstration idempotency strategy). They must not change.
	Details map[string]string
}

// NewHandler returns the ops handler:
//
//	GET /livez    200 {"status":"alive"} while the process serves HTTP
//	GET /readyz   200 {"status":"ready","checks":{name:{"status":"up","required":bool}}}
//	              503 with status "not_ready" (a required check failed) or "draining"
//	GET /metrics  the Prometheus exposition of Gatherer
//
// Any other path is 404. It is safe for concurrent use.
func NewHandler(d Deps) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /livez", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, Report{Status: "alive"})
	}))
	mux.Handle("GET /readyz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, rep := ready(r.Context(), d)
		writeJSON(w, status, rep)
	}))
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.Gatherer, promhttp.HandlerOpts{}))
	return mux
}

// Report is the body of /livez and /readyz.
type Report struct {
	Status  string                 `json:"status"` // alive, ready, not_ready or draining
	Checks  map[string]CheckReport `json:"checks,omitempty"`
	Details map[string]string      `json:"details,omitempty"`
}

// CheckReport is one dependency in a Report. The error is logged, never
// answered.
type CheckReport struct {
	Status   string `json:"status"` // up or down
	Required bool   `json:"required"`
}

// ready runs every check at once, each within CheckTimeout.
func ready(ctx context.Context, d Deps) (int, Report) {
	if d.Draining() {
		return http.StatusServiceUnavailable, Report{Status: "draining", Details: d.Details}
	}
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	rep := Report{Status: "ready", Checks: make(map[string]CheckReport, len(d.Checks)), Details: d.Details}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, c := range d.Checks {
		wg.Go(func() {
			cr := CheckReport{Status: "up", Required: c.Required}
			if err := c.Fn(ctx); err != nil {
				cr.Status = "down"
				d.Log.Warn("not ready", "check", c.Name, "required", c.Required, "err", err)
			}
			mu.Lock()
			defer mu.Unlock()
			rep.Checks[c.Name] = cr
			if cr.Status == "down" && c.Required {
				rep.Status = "not_ready"
			}
		})
	}
	wg.Wait()
	if rep.Status != "ready" {
		return http.StatusServiceUnavailable, rep
	}
	return http.StatusOK, rep
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
