package broker

import (
	"context"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/pkg/service/amqpconfirm"
)

// ErrNotConfirmed is returned when the broker nacked a publish, returned it
// as unroutable, or the channel was lost (or being recovered) before it
// confirmed.
var ErrNotConfirmed = errors.New("amqp: publish not confirmed")

// Publisher publishes persistent copies of messages straight to a queue
// (through the default exchange, mandatory) and waits for the broker's
// confirm of that message. It sends nothing while the library recovers
// the channel (amqpconfirm.Gate), so every confirm settles its own
// message. It must be used by one goroutine at a time: a basic.return is
// matched to the publish that is waiting.
type Publisher struct {
	gate    *amqpconfirm.Gate
	returns chan amqp.Return
}

// newPublisher puts ch in confirm mode (the library puts it back after a
// recovery), gates its publishes through confirms, the recovery of ch's
// connection, and listens for returned messages.
func newPublisher(ch *amqp.Channel, confirms *amqpconfirm.Recovery) (*Publisher, error) {
	if err := ch.Confirm(false); err != nil {
		return nil, fmt.Errorf("amqp confirm mode: %w", err)
	}
	return &Publisher{gate: confirms.Gate(ch), returns: ch.NotifyReturn(make(chan amqp.Return, 4))}, nil
}

// Publish sends msg to queue and returns nil only once the broker confirmed
// that the queue has it. ctx bounds the wait. A failure wraps
// ErrNotConfirmed or a channel error; the message may then still have
// arrived (a duplicate is possible, a loss is not, as long as the caller
// keeps the original).
func (p *Publisher) Publish(ctx context.Context, queue string, msg amqp.Publishing) error {
	for len(p.returns) > 0 { // stale returns of an earlier, failed publish
		<-p.returns
	}
	switch err := p.gate.Publish(ctx, "", queue, true, msg); {
	case errors.Is(err, amqpconfirm.ErrNacked):
		return fmt.Errorf("publish to %s: nacked: %w", queue, ErrNotConfirmed)
	case err != nil: // not sent (recovering), unconfirmed, cut short, or a send error
		return fmt.Errorf("publish to %s: %w: %w", queue, ErrNotConfirmed, err)
	}
	// A basic.return is dispatched before the basic.ack that follows it, so
	// it is already here if the message was unroutable.
	select {
	case r, open := <-p.returns:
		if open {
			return fmt.Errorf("publish to %s: returned %d %s: %w", queue, r.ReplyCode, r.ReplyText, ErrNotConfirmed)
		}
	default:
	}
	return nil
}
