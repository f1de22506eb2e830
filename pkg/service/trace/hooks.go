package trace

import (
	"net/http"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Handler returns h wrapped in an otelhttp server span named operation
// until Route renames it (h unchanged when tracing is off). The span
// continues a trace whose traceparent the request carries.
func (t *Tracing) Handler(h http.Handler, operation string) http.Handler {
	if !t.Enabled() {
		return h
	}
	return otelhttp.NewHandler(h, operation)
}

// Tracer returns the named tracer of the provider Setup installed, or nil
// when tracing is off, for code that skips its spans on nil.
func (t *Tracing) Tracer(name string) trace.Tracer {
	if !t.Enabled() {
		return nil
	}
	return t.tp.Tracer(name)
}

// Transport returns rt wrapped in an otelhttp client transport: one client
// span per request, its context sent as traceparent (rt unchanged when
// tracing is off). A nil rt means http.DefaultTransport.
func (t *Tracing) Transport(rt http.RoundTripper) http.RoundTripper {
	if !t.Enabled() {
		return rt
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	return otelhttp.NewTransport(rt)
}

// Redis adds a span per command (and pipeline) to rdb, without the
// command's arguments (they hold payment data). It does nothing when
// tracing is off.
func (t *Tracing) Redis(rdb redis.UniversalClient) error {
	if !t.Enabled() {
		return nil
	}
	return redisotel.InstrumentTracing(rdb, redisotel.WithDBStatement(false))
}

// Postgres adds a span per query, batch and connect to the pool that cfg
// configures (otelpgx: the SQL text is recorded, never the arguments; pool
// acquires get no span of their own). It does nothing when tracing is off.
// Call it before pgxpool.NewWithConfig.
func (t *Tracing) Postgres(cfg *pgxpool.Config) {
	if !t.Enabled() {
		return
	}
	cfg.ConnConfig.Tracer = otelpgx.NewTracer(otelpgx.WithDisableAcquireTracer())
}

// Route returns middleware for a router that knows, once it has routed a
// request, the route's pattern: it names the request's server span
// "METHOD pattern" and sets http.route. pattern is called after the
// handler ran; "" leaves the span alone. With no recording span (tracing
// off) it only calls next.
func Route(pattern func(*http.Request) string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r)
			span := trace.SpanFromContext(r.Context())
			if !span.IsRecording() {
				return
			}
			if p := pattern(r); p != "" {
				span.SetName(r.Method + " " + p)
				span.SetAttributes(attribute.String("http.route", p))
			}
		})
	}
}
