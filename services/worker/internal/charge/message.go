package charge

import (
	"errors"
	"fmt"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/message"

	"github.com/oncepay/oncepay/services/worker/internal/consumer"
)

// ErrUndecodable wraps every reason a message cannot be a payment.initiated.
var ErrUndecodable = errors.New("charge: undecodable message")

// Initiated is a decoded payment.initiated message and its scoped key.
type Initiated struct {
	message.PaymentInitiated

	key idem.Key
}

// Key returns the payment's idempotency key, scoped to its merchant.
func (m Initiated) Key() idem.Key { return m.key }

// Decode reads a payment.initiated message (see message.Decode) and scopes
// its idempotency key to its merchant. Every problem is wrapped in
// ErrUndecodable (and message.ErrUndecodable for the contract's own).
func Decode(m consumer.Message) (Initiated, error) {
	p, err := message.Decode(m.ID, m.Headers, m.Body)
	if err != nil {
		return Initiated{}, fmt.Errorf("%w: %w", ErrUndecodable, err)
	}
	k, err := idem.NewKey(p.MerchantID, p.IdempotencyKey)
	if err != nil {
		return Initiated{}, fmt.Errorf("%w: %w", ErrUndecodable, err)
	}
	return Initiated{PaymentInitiated: p, key: k}, nil
}
