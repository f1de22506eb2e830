package httpapi

import (
	"log/slog"
	"net/http"
)

func handleNotFound(log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { writeError(w, r, log, notFound()) }
}

func handleMethodNotAllowed(log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { writeError(w, r, log, methodNotAllowed()) }
}
