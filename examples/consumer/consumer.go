// Package consumer is a queue consumer that adopts oncepay's boundary: it
// ships each order message at most once per idempotency key, however
// often the broker delivers it (the idemstage helper on Redis), and passes
// the key to the shipping provider so a retry after a lost answer is the
// provider's replay.
package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemstage"
)

// Message is one delivery: the order to ship and the key it was created with.
type Message struct {
	Tenant, Key, Item string
	Qty               int
}

// Shipper is the provider: it ships once per idempotency key.
type Shipper interface {
	Ship(ctx context.Context, idempotencyKey, item string, qty int) (trackingID string, err error)
}

// Consumer ships order messages.
type Consumer struct {
	stage   *idemstage.Stage
	shipper Shipper
}

// New returns a Consumer on store.
func New(store *idem.Store, shipper Shipper) *Consumer {
	return &Consumer{idemstage.New(store, idemstage.Config{Stage: "ship", EndRetry: 5 * time.Second}), shipper}
}

// Handle ships m once and returns the tracking id. Settle the delivery by
// its error: nil ack; retry after RetryAfter on an *idem.InProgressError;
// dead-letter on idem.ErrMismatch; retry later on any other.
func (c *Consumer) Handle(ctx context.Context, m Message) (string, error) {
	k, err := idem.NewKey(m.Tenant, m.Key)
	if err != nil {
		return "", fmt.Errorf("message key: %w", err)
	}
	done, err := c.stage.Do(ctx, k, fmt.Sprintf("%s x%d", m.Item, m.Qty),
		func(ctx context.Context, a idemstage.Attempt) ([]byte, error) {
			id, err := c.shipper.Ship(ctx, a.Key.Merchant()+":"+a.Key.ID(), m.Item, m.Qty)
			return []byte(id), err
		})
	return string(done.Result), err
}

// Redeliver reports whether a delivery that failed with err should be
// delivered again (and after how long), or dead-lettered.
func Redeliver(err error) (bool, time.Duration) {
	if ip, ok := errors.AsType[*idem.InProgressError](err); ok {
		return true, ip.RetryAfter
	}
	return !errors.Is(err, idem.ErrMismatch) && !errors.Is(err, idem.ErrInvalidKey), 0
}
