package trace

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// BenchmarkRequestPath measures what tracing adds to one api request: the
// layers the api puts around its router (Handler outside, Route inside),
// WithKey once the key is known, and the outbox's publish span with its
// traceparent injection (skipped when Tracer is nil, as the outbox does). "bare" is the handler alone; "off" is every
// layer with tracing off (as Setup leaves it with no endpoint); "on"
// records every span into memory. Run the three in this order (the "on"
// case installs the global provider):
//
//	go test -run '^$' -bench RequestPath -benchmem ./trace
func BenchmarkRequestPath(b *testing.B) {
	route := func(*http.Request) string { return "/v1/payments" }
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	})
	traced := func(tr *Tracing) http.Handler {
		work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := WithKey(r.Context(), "m_1", "key-1")
			if ctx != r.Context() {
				r = r.WithContext(ctx)
			}
			if tracer := tr.Tracer("bench"); tracer != nil { // as the outbox publisher does
				pctx, span := tracer.Start(r.Context(), "payments publish", trace.WithSpanKind(trace.SpanKindProducer))
				otel.GetTextMapPropagator().Inject(pctx, propagation.MapCarrier{})
				span.End()
			}
			inner.ServeHTTP(w, r)
		})
		return tr.Handler(Route(route)(work), "api")
	}
	serve := func(b *testing.B, h http.Handler) {
		req := httptest.NewRequest(http.MethodPost, "/v1/payments", nil)
		b.ReportAllocs()
		for b.Loop() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
		}
	}

	b.Run("bare", func(b *testing.B) { serve(b, inner) })
	b.Run("off", func(b *testing.B) {
		tr, err := Setup(context.Background(), "api", "", func(string) string { return "" })
		if err != nil {
			b.Fatal(err)
		}
		serve(b, traced(tr))
	})
	b.Run("on", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(keyProcessor{}),
			sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
		otel.SetTracerProvider(tp)
		otel.SetTextMapPropagator(propagation.TraceContext{})
		serve(b, traced(&Tracing{tp: tp}))
	})
}
