package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/oncepay/oncepay/services/psp/internal/faults"
	"github.com/oncepay/oncepay/services/psp/internal/ledger"
)

// handleGetConfig serves GET /admin/config: the fault knobs in force.
func handleGetConfig(inj *faults.Injector) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = writeJSON(w, http.StatusOK, inj.Knobs())
	})
}

// handlePutConfig serves PUT /admin/config: a partial update (faults.Patch)
// applied atomically, answered with the knobs now in force; 400 listing
// every problem, changing nothing, on bad input.
func handlePutConfig(log *slog.Logger, inj *faults.Injector) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		patch, errs, _, err := decode[faults.Patch](w, r)
		if err == nil && len(errs) > 0 {
			err = invalidRequest(errs)
		}
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		knobs, err := inj.Update(patch)
		if err != nil {
			writeError(w, r, log, err) // cannot happen: decode validated patch
			return
		}
		requestLog(r, log).Info("fault knobs changed", "knobs", knobs)
		_ = writeJSON(w, http.StatusOK, knobs)
	})
}

// ledgerAdmin is the ledger as the admin endpoints use it.
type ledgerAdmin interface {
	Read(ctx context.Context, reference string) (ledger.Ledger, error)
	Summarize(ctx context.Context) (ledger.Summary, error)
	Reset(ctx context.Context) error
}

// handleReadLedger serves GET /admin/ledger[?reference=]: calls and charges,
// oldest first, all of them or those of one reference.
func handleReadLedger(log *slog.Logger, store ledgerAdmin) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l, err := store.Read(r.Context(), r.URL.Query().Get("reference"))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		_ = writeJSON(w, http.StatusOK, l)
	})
}

// handleSummary serves GET /admin/ledger/summary.
func handleSummary(log *slog.Logger, store ledgerAdmin) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := store.Summarize(r.Context())
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		_ = writeJSON(w, http.StatusOK, s)
	})
}

// handleResetLedger serves DELETE /admin/ledger: 204 once calls, charges and
// idempotency records are gone.
func handleResetLedger(log *slog.Logger, store ledgerAdmin) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := store.Reset(r.Context()); err != nil {
			writeError(w, r, log, err)
			return
		}
		requestLog(r, log).Info("ledger reset")
		w.WriteHeader(http.StatusNoContent)
	})
}
