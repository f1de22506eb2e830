package broker

import (
	"context"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// ErrNotConfirmed is returned when the broker nacked a publish, returned it
// as unroutable, or the channel was lost before it confirmed.
var ErrNotConfirmed = errors.New("amqp: publish not confirmed")

// Publisher publishes persistent copies of messages straight to a queue
// (through the default exchange, mandatory) and waits for the broker's
// confirm. It must be used by one goroutine at a time: a basic.return is
// matched to the publish that is waiting.
type Publisher struct {
	ch      *amqp.Channel
	returns chan amqp.Return
}

// newPublisher puts ch in confirm mode (the library puts it back after a
// recovery) and listens for returned messages.
func newPublisher(ch *amqp.Channel) (*Publisher, error) {
	if err := ch.Confirm(false); err != nil {
		return nil, fmt.Errorf("amqp confirm mode: %w", err)
	}
	return &Publisher{ch: ch, returns: ch.NotifyReturn(make(chan amqp.Return, 4))}, nil
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
	dc, err := p.ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, msg)
	if err != nil {
		return fmt.Errorf("publish to %s: %w", queue, err)
	}
	if dc == nil {
		return fmt.Errorf("publish to %s: channel not in confirm mode: %w", queue, ErrNotConfirmed)
	}
	ok, err := dc.WaitContext(ctx)
	if err != nil {
		return fmt.Errorf("publish to %s: waiting for the confirm: %w: %w", queue, ErrNotConfirmed, err)
	}
	if !ok {
		return fmt.Errorf("publish to %s: nacked: %w", queue, ErrNotConfirmed)
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
