package consumer

import (
	"maps"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Headers the loop reads and writes.
const (
	HeaderRetryCount       = "x-retry-count"        // delayed retries so far; set on every retry copy
	HeaderDeadLetterReason = "x-dead-letter-reason" // why the worker dead-lettered a message
	headerDeliveryCount    = "x-delivery-count"     // set by quorum queues on redelivery
)

// intHeader reads a non-negative integer header of any AMQP integer type.
func intHeader(h amqp.Table, name string) int {
	var n int64
	switch v := h[name].(type) {
	case int:
		n = int64(v)
	case int8:
		n = int64(v)
	case int16:
		n = int64(v)
	case int32:
		n = int64(v)
	case int64:
		n = v
	case uint8:
		n = int64(v)
	case uint16:
		n = int64(v)
	case uint32:
		n = int64(v)
	case uint64:
		n = int64(min(v, 1<<62))
	}
	return int(max(n, 0))
}

// redelivered reports whether the broker delivered d before.
func redelivered(d amqp.Delivery) bool {
	return d.Redelivered || intHeader(d.Headers, headerDeliveryCount) > 0
}

// copyOf returns a persistent copy of d for republishing, with the same
// message id, body and properties, the broker-managed delivery count
// dropped, and set added to the headers. The user id is not copied (the
// broker checks it against the publishing connection's user).
func copyOf(d amqp.Delivery, set amqp.Table) amqp.Publishing {
	h := maps.Clone(d.Headers)
	if h == nil {
		h = amqp.Table{}
	}
	delete(h, headerDeliveryCount)
	maps.Copy(h, set)
	return amqp.Publishing{
		Headers:         h,
		ContentType:     d.ContentType,
		ContentEncoding: d.ContentEncoding,
		DeliveryMode:    amqp.Persistent,
		Priority:        d.Priority,
		CorrelationId:   d.CorrelationId,
		ReplyTo:         d.ReplyTo,
		MessageId:       d.MessageId,
		Timestamp:       d.Timestamp,
		Type:            d.Type,
		AppId:           d.AppId,
		Body:            d.Body,
	}
}
