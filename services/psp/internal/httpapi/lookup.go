package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/oncepay/oncepay/services/psp/internal/charge"
	"github.com/oncepay/oncepay/services/psp/internal/faults"
	"github.com/oncepay/oncepay/services/psp/internal/ledger"
)

// lookupStore is the ledger as GET /v1/charges uses it.
type lookupStore interface {
	Lookup(ctx context.Context, key string) (ledger.Stored, error)
}

// handleLookup serves GET /v1/charges?idempotency_key=K: the answer stored
// under K (the charge or the decline, the body a POST with K got or would
// have got) with 200, or 404 when nothing was ever charged or declined
// under K. It changes nothing and is not recorded in the ledger's calls.
// The fault knobs apply as to a charge, minus jitter and fail_after:
// latency_ms, then fail_before_rate (503) or error_rate (500), drawn apart
// from the seeded sequence so that lookups never shift the charges' plans.
func handleLookup(log *slog.Logger, store lookupStore, inj *faults.Injector) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys := r.URL.Query()["idempotency_key"]
		key := ""
		if len(keys) > 0 {
			key = keys[0]
		}
		switch msg := charge.KeyProblem(key); {
		case len(keys) > 1:
			writeError(w, r, log, invalidRequest([]fieldError{{Field: "idempotency_key", In: "query", Detail: "must be sent once"}}))
			return
		case msg != "":
			writeError(w, r, log, invalidRequest([]fieldError{{Field: "idempotency_key", In: "query", Detail: msg}}))
			return
		}
		k := inj.Knobs()
		if !sleep(r.Context(), time.Duration(k.LatencyMS)*time.Millisecond) {
			return
		}
		switch {
		case rand.Float64() < k.FailBeforeRate:
			writeError(w, r, log, simulatedOutage())
			return
		case rand.Float64() < k.ErrorRate:
			writeError(w, r, log, simulatedError())
			return
		}
		st, err := store.Lookup(r.Context(), key)
		switch {
		case errors.Is(err, ledger.ErrNoRecord):
			writeError(w, r, log, noSuchKey())
		case err != nil:
			writeError(w, r, log, err)
		default:
			writeBody(w, http.StatusOK, "application/json", st.Body)
		}
	})
}
