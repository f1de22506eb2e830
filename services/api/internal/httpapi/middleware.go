package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/oncepay/oncepay/pkg/service/httpserver"
)

// requestInfo is what the access log line reports about a request; the
// handlers fill it in as they learn it. It is used by the request's own
// goroutine only.
type requestInfo struct {
	id       string // X-Request-Id
	merchant string // set by authenticate
	key      string // the Idempotency-Key, once parsed (not a secret)
}

type infoKey struct{}

// infoFrom returns the request's info; a throwaway one outside observe.
func infoFrom(ctx context.Context) *requestInfo {
	if info, ok := ctx.Value(infoKey{}).(*requestInfo); ok {
		return info
	}
	return &requestInfo{}
}

// observe gives each request an id (the client's X-Request-Id if it is
// 1-64 visible ASCII characters, else a random one), echoes it, and after
// the request records http_requests_total, http_request_duration_seconds
// (labels from fixed sets: httpserver.Route and httpserver.Method) and one
// JSON log line with the route, status, merchant and
// idempotency key.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{id: requestID(r.Header.Get("X-Request-Id"))}
		w.Header().Set("X-Request-Id", info.id)
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r.WithContext(context.WithValue(r.Context(), infoKey{}, info)))

		route := httpserver.Route(chi.RouteContext(r.Context()).RoutePattern())
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK
		}
		elapsed := time.Since(start)
		s.metrics.HTTPRequests.WithLabelValues(route, httpserver.Method(r.Method), strconv.Itoa(status)).Inc()
		s.metrics.HTTPDuration.WithLabelValues(route).Observe(elapsed.Seconds())
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("request_id", info.id), slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.String("route", route), slog.Int("status", status), slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
			slog.Int("bytes", ww.BytesWritten()), slog.String("merchant", info.merchant),
			slog.String("idempotency_key", info.key), slog.String("replayed", ww.Header().Get("Idempotent-Replayed")))
	})
}

func requestID(given string) string {
	if given != "" && len(given) <= 64 && !strings.ContainsFunc(given, func(c rune) bool { return c <= ' ' || c > '~' }) {
		return given
	}
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// recoverer turns a panic into a logged 500 problem (http.ErrAbortHandler
// is passed on, as net/http expects).
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.ErrorContext(r.Context(), "panic", "panic", p, "request_id", infoFrom(r.Context()).id)
			s.writeError(w, r, errPanic)
		}()
		next.ServeHTTP(w, r)
	})
}

var errPanic = errors.New("httpapi: handler panicked")
