package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

type pinger interface {
	Ping(ctx context.Context) error
}

// handleLivez serves GET /livez: 200 while the process serves HTTP.
func handleLivez() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
}

// handleReadyz serves GET /readyz: 200 when Postgres answers within a
// second, 503 when it does not or once draining reports true.
func handleReadyz(log *slog.Logger, db pinger, draining func() bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draining() {
			writeError(w, r, log, notReady("shutting down"))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		if err := db.Ping(ctx); err != nil {
			requestLog(r, log).Warn("not ready", "err", err)
			writeError(w, r, log, notReady("postgres does not answer"))
			return
		}
		_ = writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
}

func handleNotFound(log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { writeError(w, r, log, notFound()) }
}

func handleMethodNotAllowed(log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { writeError(w, r, log, methodNotAllowed()) }
}
