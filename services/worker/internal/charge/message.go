package charge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/oncepay/oncepay/pkg/idem"

	"github.com/oncepay/oncepay/services/worker/internal/consumer"
)

// ErrUndecodable wraps every reason a message cannot be a payment.initiated.
var ErrUndecodable = errors.New("charge: undecodable message")

// Initiated is a decoded payment.initiated message.
type Initiated struct {
	PaymentID      string `json:"payment_id"`
	MerchantID     string `json:"merchant_id"`
	IdempotencyKey string `json:"idempotency_key"`
	Amount         int64  `json:"amount"`
	Currency       string `json:"currency"`
	CustomerID     string `json:"customer_id"`

	key idem.Key
}

// Key returns the payment's idempotency key, scoped to its merchant.
func (m Initiated) Key() idem.Key { return m.key }

// Decode reads a payment.initiated message: a JSON body with every field
// set, a message id equal to payment_id, and the x-idempotency-key and
// x-merchant-id headers equal to the body's. It reports every problem at
// once, wrapped in ErrUndecodable; unknown body fields are ignored.
func Decode(m consumer.Message) (Initiated, error) {
	var msg Initiated
	dec := json.NewDecoder(bytes.NewReader(m.Body))
	if err := dec.Decode(&msg); err != nil {
		return Initiated{}, fmt.Errorf("%w: body: %w", ErrUndecodable, err)
	}
	if dec.More() {
		return Initiated{}, fmt.Errorf("%w: body: data after the JSON object", ErrUndecodable)
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, f := range []struct{ name, v string }{
		{"payment_id", msg.PaymentID}, {"merchant_id", msg.MerchantID},
		{"idempotency_key", msg.IdempotencyKey}, {"customer_id", msg.CustomerID},
	} {
		if f.v == "" {
			bad("%s is missing", f.name)
		}
	}
	if msg.Amount <= 0 {
		bad("amount must be a positive integer, got %d", msg.Amount)
	}
	if !currency(msg.Currency) {
		bad("currency must be three upper-case letters, got %q", msg.Currency)
	}
	if m.ID != msg.PaymentID {
		bad("message id %q is not payment_id %q", m.ID, msg.PaymentID)
	}
	for _, h := range []struct{ name, want string }{
		{"x-idempotency-key", msg.IdempotencyKey}, {"x-merchant-id", msg.MerchantID},
	} {
		if got, _ := m.Headers[h.name].(string); got != h.want {
			bad("header %s %q disagrees with the body %q", h.name, got, h.want)
		}
	}
	if msg.MerchantID != "" && msg.IdempotencyKey != "" {
		k, err := idem.NewKey(msg.MerchantID, msg.IdempotencyKey)
		if err != nil {
			bad("%w", err)
		}
		msg.key = k
	}
	if len(errs) > 0 {
		return Initiated{}, fmt.Errorf("%w: %w", ErrUndecodable, errors.Join(errs...))
	}
	return msg, nil
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
