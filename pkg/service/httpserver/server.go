package httpserver

import (
	"log/slog"
	"net/http"
	"time"
)

// The limits New sets. A client that trickles its header is cut off after
// ReadHeaderTimeout; one that trickles its body after ReadTimeout; an idle
// keep-alive connection is closed after IdleTimeout. Request bodies are
// bounded by the handlers (the api: 64 KiB).
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 30 * time.Second
	IdleTimeout       = 2 * time.Minute
	MaxHeaderBytes    = 32 << 10
)

// New returns an http.Server for h with the limits above and net/http's
// own errors (TLS handshakes, bad requests, panics it recovers) logged at
// warn level on log. It sets no WriteTimeout: how long an answer may take
// is the handler's to bound (the api bounds its work by the lease).
// Callers may change fields before serving.
func New(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
