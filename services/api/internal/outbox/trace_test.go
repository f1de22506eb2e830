package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/services/api/internal/metrics"
	"github.com/oncepay/oncepay/services/api/internal/outbox"
	"github.com/oncepay/oncepay/services/api/migrations/migrationstest"
)

// A row written under a traced request and published later by the relay
// (the publish right after the commit failed): the relay's publish span is
// a child of the request's span, and the message's traceparent names it,
// so the worker's delivery joins the payment's trace.
func TestRelayPublishJoinsTheRequestTrace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrationstest.NewPool(t)
	rec := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")

	reqCtx, req := tracer.Start(ctx, "POST /v1/payments", trace.WithSpanKind(trace.SpanKindServer))
	err := pgx.BeginFunc(reqCtx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(reqCtx, `INSERT INTO payments (id, merchant_id, idempotency_key, request_fingerprint,
				amount, currency, customer_id, response_status, response_body, created_at, updated_at)
			VALUES ('pay_t', 'm', 'k', 'fp', 1, 'EUR', 'c', 202, '{}', now(), now())`); err != nil {
			return err
		}
		m, err := outbox.NewPaymentInitiated(message.PaymentInitiated{PaymentID: "pay_t", MerchantID: "m",
			IdempotencyKey: "k", Amount: 1, Currency: "EUR", CustomerID: "c"})
		if err != nil {
			return err
		}
		return outbox.Insert(reqCtx, tx, &m)
	})
	req.End()
	if err != nil {
		t.Fatal(err)
	}

	amqpURL := testenv.AMQPURL(t)
	topo := testTopology(t, amqpURL)
	pub := outbox.NewPublisher(outbox.PublisherConfig{URL: amqpURL, Topology: topo, ConnectionName: "trace-test", Tracer: tracer}, discard)
	pub.Start()
	t.Cleanup(func() { pub.Close() })
	deliveries := bindAndConsume(t, amqpURL, topo.Exchange)
	relay := outbox.New(pool, pub, metrics.New(prometheus.NewRegistry(), "t"), discard, outbox.Config{})
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; n == 0; {
		if n, err = relay.RelayOnce(ctx); err != nil || (n == 0 && time.Now().After(deadline)) {
			t.Fatalf("relay published %d rows: %v", n, err)
		}
		if n == 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}

	var d struct{ traceparent string }
	select {
	case got := <-deliveries:
		d.traceparent = message.Carrier(got.Headers).Get(message.HeaderTraceParent)
	case <-time.After(5 * time.Second):
		t.Fatal("the relayed message did not arrive")
	}
	var publish sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.SpanKind() == trace.SpanKindProducer {
			publish = s
		}
	}
	if publish == nil {
		t.Fatal("no publish span recorded")
	}
	reqSC := req.SpanContext()
	if publish.Parent().SpanID() != reqSC.SpanID() || publish.SpanContext().TraceID() != reqSC.TraceID() {
		t.Errorf("publish span: trace %s parent %s, want trace %s parent %s (the request)",
			publish.SpanContext().TraceID(), publish.Parent().SpanID(), reqSC.TraceID(), reqSC.SpanID())
	}
	want := "00-" + reqSC.TraceID().String() + "-" + publish.SpanContext().SpanID().String() + "-01"
	if d.traceparent != want {
		t.Errorf("message traceparent %q, want %q (the publish span)", d.traceparent, want)
	}
}
