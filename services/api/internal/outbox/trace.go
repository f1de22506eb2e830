package outbox

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/oncepay/oncepay/pkg/message"
	oncetrace "github.com/oncepay/oncepay/pkg/service/trace"
)

// startPublish starts the producer span of one publish of m to exchange,
// a child of the span in ctx (the request's, for the publish right after
// the commit; none for the relay's), carrying the payment's merchant and
// idempotency key.
func startPublish(ctx context.Context, tracer trace.Tracer, exchange string, m Message) (context.Context, trace.Span) {
	return tracer.Start(ctx, exchange+" publish",
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

// inject writes the context of the span in ctx into the headers of p
// (traceparent, tracestate), so that the consumer's span joins the trace.
func inject(ctx context.Context, headers map[string]any) {
	otel.GetTextMapPropagator().Inject(ctx, message.Carrier(headers))
}
