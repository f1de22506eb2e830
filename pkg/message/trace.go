package message

import (
	amqp "github.com/rabbitmq/amqp091-go"
)

// W3C trace-context headers a payment.initiated message may carry next to
// x-idempotency-key, when the publisher traces: the publish span's context,
// so that each delivery's consumer span joins the payment's trace.
// Retry copies keep them.
const (
	HeaderTraceParent = "traceparent"
	HeaderTraceState  = "tracestate"
)

// Carrier adapts a message's AMQP headers to OpenTelemetry's
// propagation.TextMapCarrier (Get, Set, Keys), so a propagator can inject
// a span context into a publishing's headers and extract it from a
// delivery's. Set on a nil Carrier panics: start from a made table.
type Carrier amqp.Table

// Get returns the string header key, or "".
func (c Carrier) Get(key string) string {
	s, _ := c[key].(string)
	return s
}

// Set sets header key to value.
func (c Carrier) Set(key, value string) { c[key] = value }

// Keys returns the names of the string headers.
func (c Carrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k, v := range c {
		if _, ok := v.(string); ok {
			keys = append(keys, k)
		}
	}
	return keys
}
