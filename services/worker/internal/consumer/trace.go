package consumer

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/oncepay/oncepay/pkg/message"
	oncetrace "github.com/oncepay/oncepay/pkg/service/trace"
)

const tracerName = "github.com/oncepay/oncepay/services/worker/internal/consumer"

// startDelivery starts the consumer span of one delivery: a child of the
// publish span whose context d carries in its traceparent header (retry
// copies keep it, so every delivery of a payment joins the payment's
// trace), carrying the merchant and idempotency key of its headers, which
// every span started under the returned context gets too.
func startDelivery(ctx context.Context, d amqp.Delivery, m Message) (context.Context, trace.Span) {
	ctx = otel.GetTextMapPropagator().Extract(ctx, message.Carrier(d.Headers))
	ctx, span := otel.Tracer(tracerName).Start(ctx, message.RoutingKey+" process",
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("messaging.system", "rabbitmq"),
			attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.destination.name", d.Exchange), // "" for a retry copy (default exchange)
			attribute.String("messaging.rabbitmq.destination.routing_key", d.RoutingKey),
			attribute.String("messaging.message.id", m.ID),
			attribute.Int("messaging.rabbitmq.attempt", m.Attempt),
			attribute.Bool("messaging.rabbitmq.redelivered", m.Redelivered),
		))
	merchant, _ := d.Headers[message.HeaderMerchantID].(string)
	key, _ := d.Headers[message.HeaderIdempotencyKey].(string)
	return oncetrace.WithKey(ctx, merchant, key), span
}

// endDelivery records the handler's outcome and error on span and ends it.
func endDelivery(span trace.Span, outcome string, err error) {
	span.SetAttributes(attribute.String("oncepay.outcome", outcome))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
