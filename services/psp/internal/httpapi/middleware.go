package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/oncepay/oncepay/pkg/service/httpserver"
)

type ctxKey int

const requestIDKey ctxKey = iota

// requestID gives every request an id: the caller's X-Request-Id when it is
// 1..128 visible ASCII characters, a random one otherwise. The id is echoed
// in the X-Request-Id response header and in logs and problem answers.
func requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
	})
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := range len(id) {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// requestLog is log with the request's id.
func requestLog(r *http.Request, log *slog.Logger) *slog.Logger {
	return log.With("request_id", requestIDFrom(r.Context()))
}

// observe logs every request and records its duration (labels from fixed
// sets: httpserver.Method and httpserver.Route). A request that got no
// answer at all (its connection was dropped on purpose) is reported with
// code "none".
func observe(log *slog.Logger, m *Metrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			rec := &statusRecorder{ResponseWriter: w}
			defer func() {
				elapsed := time.Since(start)
				route := httpserver.Route(chi.RouteContext(r.Context()).RoutePattern())
				code := "none"
				if rec.status != 0 {
					code = strconv.Itoa(rec.status)
				}
				m.duration.WithLabelValues(httpserver.Method(r.Method), route, code).Observe(elapsed.Seconds())
				requestLog(r, log).Info("request",
					"method", r.Method, "route", route, "code", code, "duration_ms", float64(elapsed.Microseconds())/1000)
			}()
			next.ServeHTTP(rec, r)
		})
	}
}

// statusRecorder remembers the status written. Unwrap lets
// http.ResponseController reach the real writer (for Hijack and Flush).
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// recoverPanics turns a panic into a logged 500. http.ErrAbortHandler is
// passed on: it is how a handler asks the server to drop the connection.
func recoverPanics(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				if v == http.ErrAbortHandler {
					panic(v)
				}
				requestLog(r, log).Error("panic", "panic", v, "stack", string(debug.Stack()))
				writeError(w, r, log, errPanic)
			}()
			next.ServeHTTP(w, r)
		})
	}
}
