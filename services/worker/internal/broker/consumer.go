package broker

import (
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Consumer is the one channel the worker consumes, settles and publishes
// retries on: QoS prefetch, confirm mode, the topology declared on it (so
// that recovery redeclares it), and a manual-ack consumer on Topology.Queue.
// Only one goroutine may use it (the consumer loop).
type Consumer struct {
	Channel    *amqp.Channel
	Deliveries <-chan amqp.Delivery
	Guard      *Guard
	Publisher  *Publisher
	tag        string
}

// Consume opens the consumer channel on c. The returned Deliveries channel
// stays the same across recoveries; it closes when the consumer is
// cancelled or the connection is beyond recovery.
func (c *Conn) Consume(t Topology, prefetch int, tag string) (*Consumer, error) {
	ch, err := c.Channel()
	if err != nil {
		return nil, fmt.Errorf("amqp channel: %w", err)
	}
	fail := func(err error) (*Consumer, error) {
		_ = ch.Close()
		return nil, err
	}
	if err := ch.Qos(prefetch, 0, false); err != nil {
		return fail(fmt.Errorf("amqp qos: %w", err))
	}
	pub, err := newPublisher(ch)
	if err != nil {
		return fail(err)
	}
	if err := t.Declare(ch); err != nil {
		return fail(err)
	}
	deliveries, err := ch.Consume(t.Queue, tag, false, false, false, false, nil)
	if err != nil {
		return fail(fmt.Errorf("amqp consume %s: %w", t.Queue, err))
	}
	return &Consumer{Channel: ch, Deliveries: deliveries, Guard: c.Epochs.Guard(ch), Publisher: pub, tag: tag}, nil
}

// Ack acknowledges one delivery.
func (c *Consumer) Ack(tag uint64) error { return c.Channel.Ack(tag, false) }

// Nack rejects one delivery; requeue false dead-letters it.
func (c *Consumer) Nack(tag uint64, requeue bool) error { return c.Channel.Nack(tag, false, requeue) }

// Cancel stops the consumer: the broker sends no new deliveries, and
// Deliveries closes once those already received are read. Deliveries not
// yet settled stay unacked until the channel closes, then the broker
// requeues them.
func (c *Consumer) Cancel() error { return c.Channel.Cancel(c.tag, false) }

// Alive reports whether the channel is open and its consumer not cancelled.
func (c *Consumer) Alive() bool { return !c.Channel.IsClosed() }
