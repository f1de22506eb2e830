// Package httpapi is the simulator's HTTP interface: POST /v1/charges, the
// admin endpoints for fault knobs and the ledger. Health and metrics are
// on the ops listener (pkg/service/ops), never here.
//
// Every route is in routes.go; JSON decoding and validation are in json.go,
// the mapping of errors to problem+json answers in problem.go.
package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

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

// NewServer returns the simulator's HTTP handler. It is safe for concurrent use.
func NewServer(d Deps) http.Handler {
	r := chi.NewRouter()
	r.Use(requestID, observe(d.Logger, d.Metrics), recoverPanics(d.Logger))
	addRoutes(r, d)
	return r
}
