package trace

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Span attributes that name the payment a span works for.
const (
	AttrMerchant       = attribute.Key("oncepay.merchant_id")
	AttrIdempotencyKey = attribute.Key("oncepay.idempotency_key")
)

type keyCtx struct{}

// WithKey marks ctx as working for the payment (merchant, key): the span in
// ctx gets both as attributes, and so does every span started from the
// returned context in this process (Redis commands, Postgres queries, psp
// calls). Both also go into the context's W3C baggage, so a traced call to
// another service carries them (see KeyFromBaggage). When the span in ctx
// is not recording (tracing off, or not sampled) it returns ctx unchanged
// and allocates nothing.
func WithKey(ctx context.Context, merchant, key string) context.Context {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return ctx
	}
	kv := []attribute.KeyValue{AttrMerchant.String(merchant), AttrIdempotencyKey.String(key)}
	span.SetAttributes(kv...)
	b := baggage.FromContext(ctx)
	for _, a := range kv {
		if m, err := baggage.NewMemberRaw(string(a.Key), a.Value.AsString()); err == nil {
			b, _ = b.SetMember(m)
		}
	}
	return context.WithValue(baggage.ContextWithBaggage(ctx, b), keyCtx{}, kv)
}

// KeyFromBaggage is middleware for a service called by one that used
// WithKey: when the request's baggage (extracted by Handler) names a
// merchant and idempotency key, the request's span and every span under it
// get them, as with WithKey. With tracing off it only calls next.
func KeyFromBaggage(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if trace.SpanFromContext(r.Context()).IsRecording() {
			b := baggage.FromContext(r.Context())
			merchant, key := b.Member(string(AttrMerchant)).Value(), b.Member(string(AttrIdempotencyKey)).Value()
			if merchant != "" || key != "" {
				r = r.WithContext(WithKey(r.Context(), merchant, key))
			}
		}
		next.ServeHTTP(w, r)
	})
}

// keyProcessor stamps the attributes of WithKey on every span started from
// a context that carries them.
type keyProcessor struct{}

func (keyProcessor) OnStart(parent context.Context, s sdktrace.ReadWriteSpan) {
	if kv, ok := parent.Value(keyCtx{}).([]attribute.KeyValue); ok {
		s.SetAttributes(kv...)
	}
}

func (keyProcessor) OnEnd(sdktrace.ReadOnlySpan)      {}
func (keyProcessor) Shutdown(context.Context) error   { return nil }
func (keyProcessor) ForceFlush(context.Context) error { return nil }
