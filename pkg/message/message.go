// Package message is the contract between the api, which publishes a
// payment.initiated message for every payment, and the worker, which
// consumes it: the message type, its AMQP envelope (routing key, message
// id, headers), its encoding, and the RabbitMQ topology both services
// declare (Topology).
//
// A payment.initiated message is a persistent JSON body (PaymentInitiated)
// whose message id is the payment id and whose headers x-idempotency-key
// and x-merchant-id repeat the body's idempotency key and merchant, so a
// consumer can log and scope a message before decoding its body. A traced
// publisher adds the W3C traceparent and tracestate headers (Carrier).
package message

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// RoutingKey is the routing key of a payment.initiated message.
const RoutingKey = "payment.initiated"

// Headers set on every payment.initiated message.
const (
	HeaderIdempotencyKey = "x-idempotency-key"
	HeaderMerchantID     = "x-merchant-id"
)

// ErrUndecodable wraps every reason a delivery is not a valid
// payment.initiated message.
var ErrUndecodable = errors.New("message: not a valid payment.initiated")

// PaymentInitiated is the body of a payment.initiated message: the payment
// the worker must charge.
type PaymentInitiated struct {
	PaymentID      string `json:"payment_id"`
	MerchantID     string `json:"merchant_id"`
	IdempotencyKey string `json:"idempotency_key"`
	Amount         int64  `json:"amount"` // minor units, > 0
	Currency       string `json:"currency"`
	CustomerID     string `json:"customer_id"`
}

// Encode returns m as a publishing: its JSON body in the envelope of Wrap.
func (m PaymentInitiated) Encode() (amqp.Publishing, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return amqp.Publishing{}, fmt.Errorf("encode payment.initiated %s: %w", m.PaymentID, err)
	}
	return Wrap(m.PaymentID, m.MerchantID, m.IdempotencyKey, body), nil
}

// Wrap returns the publishing of an already encoded body: persistent JSON,
// message id paymentID, and the idempotency key and merchant in headers.
// The caller may set Timestamp.
func Wrap(paymentID, merchantID, idempotencyKey string, body []byte) amqp.Publishing {
	return amqp.Publishing{
		ContentType:  "application/json",
		DeliveryMode: amqp.Persistent,
		MessageId:    paymentID,
		Headers: amqp.Table{
			HeaderIdempotencyKey: idempotencyKey,
			HeaderMerchantID:     merchantID,
		},
		Body: body,
	}
}

// Decode reads a payment.initiated message from its message id, headers
// and body: a JSON body with every field set (amount positive, currency
// three upper-case letters), a message id equal to payment_id, and the
// x-idempotency-key and x-merchant-id headers equal to the body's. It
// reports every problem at once, wrapped in ErrUndecodable; unknown body
// fields are ignored.
func Decode(id string, headers amqp.Table, body []byte) (PaymentInitiated, error) {
	var m PaymentInitiated
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&m); err != nil {
		return PaymentInitiated{}, fmt.Errorf("%w: body: %w", ErrUndecodable, err)
	}
	if dec.More() {
		return PaymentInitiated{}, fmt.Errorf("%w: body: data after the JSON object", ErrUndecodable)
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, f := range []struct{ name, v string }{
		{"payment_id", m.PaymentID}, {"merchant_id", m.MerchantID},
		{"idempotency_key", m.IdempotencyKey}, {"customer_id", m.CustomerID},
	} {
		if f.v == "" {
			bad("%s is missing", f.name)
		}
	}
	if m.Amount <= 0 {
		bad("amount must be a positive integer, got %d", m.Amount)
	}
	if !currency(m.Currency) {
		bad("currency must be three upper-case letters, got %q", m.Currency)
	}
	if id != m.PaymentID {
		bad("message id %q is not payment_id %q", id, m.PaymentID)
	}
	for _, h := range []struct{ name, want string }{
		{HeaderIdempotencyKey, m.IdempotencyKey}, {HeaderMerchantID, m.MerchantID},
	} {
		if got, _ := headers[h.name].(string); got != h.want {
			bad("header %s %q disagrees with the body %q", h.name, got, h.want)
		}
	}
	if len(errs) > 0 {
		return PaymentInitiated{}, fmt.Errorf("%w: %w", ErrUndecodable, errors.Join(errs...))
	}
	return m, nil
}

func currency(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := range len(s) {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}
