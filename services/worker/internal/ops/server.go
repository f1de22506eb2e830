// Package ops serves the worker's operational endpoints: /livez, /readyz
// and /metrics.
package ops

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// Check is one readiness dependency: Fn returns nil when it is usable.
type Check struct {
	Name string
	Fn   func(ctx context.Context) error
}

// Deps are what the ops server reports on.
type Deps struct {
	Log      *slog.Logger
	Checks   []Check
	Gatherer prometheus.Gatherer
	Draining func() bool // true once shutdown began: /readyz answers 503
	// Details, if set, are added to every /readyz answer (e.g. a
	// demonstration idempotency strategy).
	Details map[string]string
}

// NewServer returns the ops handler.
func NewServer(d Deps) http.Handler {
	mux := http.NewServeMux()
	addRoutes(mux, d)
	return mux
}
