package outbox

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/oncepay/oncepay/pkg/message"
	oncetrace "github.com/oncepay/oncepay/pkg/service/trace"
)

// startPublish starts the producer span of one publish of m to exchange,
// a child of the span in ctx (the request's, for the publish right after
// the commit) or else of the request that wrote m (m.TraceParent, for the
// relay's and the sweeper's), carrying the payment's merchant and
// idempotency key.
func startPublish(ctx context.Context, tracer trace.Tracer, exchange string, m Message) (context.Context, trace.Span) {
	return tracer.Start(parentOf(ctx, m), exchange+" publish",
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attribute.String("messaging.system", "rabbitmq"),
			attribute.String("messaging.operation.type", "send"),
			attribute.String("messaging.destination.name", exchange),
			attribute.String("messaging.rabbitmq.destination.routing_key", m.RoutingKey),
			attribute.String("messaging.message.id", m.PaymentID),
			oncetrace.AttrMerchant.String(m.MerchantID),
			oncetrace.AttrIdempotencyKey.String(m.IdempotencyKey),
		))
}

// endPublish records err on span and ends it.
func endPublish(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// w3c is the propagation of trace context through the outbox and the
// message headers: W3C traceparent and tracestate.
var w3c propagation.TraceContext

// inject writes the context of the span in ctx into headers (traceparent,
// tracestate), so that the consumer's span joins the trace.
func inject(ctx context.Context, headers map[string]any) {
	w3c.Inject(ctx, message.Carrier(headers))
}

// TraceParent returns the W3C traceparent of the span in ctx, for
// Message.TraceParent, or "" when ctx holds no sampled span (tracing off:
// nothing is allocated).
func TraceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsSampled() {
		return ""
	}
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c.Get(message.HeaderTraceParent)
}

// parentOf returns ctx, or, when ctx holds no span (a relay or sweeper
// pass) and m recorded one, ctx with the remote span of m.TraceParent as
// the parent of the publish span.
func parentOf(ctx context.Context, m Message) context.Context {
	if m.TraceParent == "" || trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	return w3c.Extract(ctx, propagation.MapCarrier{message.HeaderTraceParent: m.TraceParent})
}
