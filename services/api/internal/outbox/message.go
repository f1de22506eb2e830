// Package outbox delivers the api's messages to RabbitMQ through a
// transactional outbox: the message row is written in the same Postgres
// transaction as the payment, published right after the commit (Outbox.Send),
// and republished by a relay (Outbox.Run) if that first attempt was not
// confirmed. A payment therefore never exists without its message being
// published eventually; a message may be published more than once, and the
// consumer dedupes by idempotency key. A sweeper (Outbox.SweepOnce)
// publishes again, a bounded number of times, the message of a payment
// that stays pending long after its message was published, in case the
// message was lost on the broker's side.
package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncepay/oncepay/pkg/message"
	amqp "github.com/rabbitmq/amqp091-go"
)

// Message is one outbox row: what will be published and to where. The
// field order matches the columns read by the relay; TraceParent is read
// apart (db:"-"), so that a positional scan of the other columns still
// fits.
type Message struct {
	ID             int64 // outbox row id, set by Insert
	PaymentID      string
	MerchantID     string
	IdempotencyKey string
	RoutingKey     string
	Payload        []byte    // the message body
	CreatedAt      time.Time // set by Insert (the database clock)
	// TraceParent is the W3C traceparent of the request that wrote the
	// row, set by Insert when the request was traced; "" otherwise.
	TraceParent string `db:"-"`
}

// NewPaymentInitiated returns the unsaved outbox message announcing e.
func NewPaymentInitiated(e message.PaymentInitiated) (Message, error) {
	p, err := e.Encode()
	if err != nil {
		return Message{}, err
	}
	return Message{
		PaymentID:      e.PaymentID,
		MerchantID:     e.MerchantID,
		IdempotencyKey: e.IdempotencyKey,
		RoutingKey:     message.RoutingKey,
		Payload:        p.Body,
	}, nil
}

// Insert writes m as an unpublished outbox row inside tx and sets m.ID,
// m.CreatedAt and, when ctx holds a traced span, m.TraceParent (stored with
// the row, so that a later publish joins the trace). The row commits or
// rolls back with the caller's transaction.
func Insert(ctx context.Context, tx pgx.Tx, m *Message) error {
	m.TraceParent = TraceParent(ctx)
	err := tx.QueryRow(ctx, `INSERT INTO outbox (payment_id, merchant_id, idempotency_key, routing_key, payload, trace_parent)
		VALUES ($1, $2, $3, $4, $5, NULLIF($6, '')) RETURNING id, created_at`,
		m.PaymentID, m.MerchantID, m.IdempotencyKey, m.RoutingKey, m.Payload, m.TraceParent).Scan(&m.ID, &m.CreatedAt)
	if err != nil {
		return fmt.Errorf("insert outbox row for %s: %w", m.PaymentID, err)
	}
	return nil
}

// publishing is the AMQP form of m (message.Wrap), timestamped with the
// row's creation time (the same on every republish).
func (m Message) publishing() amqp.Publishing {
	p := message.Wrap(m.PaymentID, m.MerchantID, m.IdempotencyKey, m.Payload)
	p.Timestamp = m.CreatedAt
	return p
}
