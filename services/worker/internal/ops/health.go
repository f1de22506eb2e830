package ops

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// checkTimeout bounds every readiness check.
const checkTimeout = time.Second

// handleLivez answers 200 while the process serves HTTP.
func handleLivez() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
}

// readiness is the body of /readyz.
type readiness struct {
	Status  string            `json:"status"` // ok, unavailable or draining
	Checks  map[string]string `json:"checks"` // name -> "ok" or "down" (the error is logged, never answered)
	Details map[string]string `json:"details,omitempty"`
}

// handleReadyz runs every check at once (each within checkTimeout) and
// answers 200 when all pass; 503 when one fails or shutdown has begun.
func handleReadyz(log *slog.Logger, checks []Check, draining func() bool, details map[string]string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), checkTimeout)
		defer cancel()
		res := readiness{Status: "ok", Checks: make(map[string]string, len(checks)), Details: details}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, c := range checks {
			wg.Go(func() {
				msg := "ok"
				if err := c.Fn(ctx); err != nil {
					msg = "down"
					log.Warn("not ready", "check", c.Name, "err", err)
				}
				mu.Lock()
				res.Checks[c.Name] = msg
				mu.Unlock()
			})
		}
		wg.Wait()
		for _, msg := range res.Checks {
			if msg != "ok" {
				res.Status = "unavailable"
			}
		}
		if draining() {
			res.Status = "draining"
		}
		status := http.StatusOK
		if res.Status != "ok" {
			status = http.StatusServiceUnavailable
		}
		writeJSON(w, status, res)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
