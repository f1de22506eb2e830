package trace

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
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
// returned context, in this process (Redis commands, Postgres queries, psp
// calls). When the span in ctx is not recording (tracing off, or not
// sampled) it returns ctx unchanged and allocates nothing.
func WithKey(ctx context.Context, merchant, key string) context.Context {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return ctx
	}
	kv := []attribute.KeyValue{AttrMerchant.String(merchant), AttrIdempotencyKey.String(key)}
	span.SetAttributes(kv...)
	return context.WithValue(ctx, keyCtx{}, kv)
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
