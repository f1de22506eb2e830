package broker

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Consumer is the one channel the worker consumes, settles and publishes
// retries on: QoS prefetch, confirm mode, the topology declared on it (so
// that recovery redeclares it), and a manual-ack consumer on Topology.Queue.
// Only one goroutine may settle and publish on it (the consumer loop).
//
// A consumer the broker cancels (basic.cancel: its queue was deleted)
// subscribes again: amqp091-go's recovery covers a lost connection or
// channel, not a server-side cancel, after which the library closes the
// subscription's delivery channel. Consumer then declares the topology
// again, on the same channel, and consumes anew under the same tag, after
// resubscribeInterval and again every resubscribeInterval until it
// succeeds, feeding the same Deliveries
// channel. The channel session is unchanged, so delivery tags go on
// increasing and deliveries read before the cancel may still be settled.
// Messages that were ready in the deleted queue are gone with it (the
// api's outbox sweeper publishes again the message of a payment that stays
// pending).
type Consumer struct {
	Channel *amqp.Channel
	// Deliveries stays the same across recoveries and resubscriptions; it
	// closes when the consumer is cancelled by Cancel or the channel is
	// beyond recovery.
	Deliveries <-chan amqp.Delivery
	Guard      *Guard
	Publisher  *Publisher
	tag        string

	topo       Topology
	conn       *Conn
	log        *slog.Logger
	cancelled  atomic.Bool   // Cancel was called
	stop       chan struct{} // closed by Cancel
	subscribed atomic.Bool   // a subscription is live
}

// resubscribeInterval is the pause before each attempt to subscribe again
// after the broker cancelled the consumer. The first pause matters: the
// broker cancels every consumer of a deleted queue, and a queue declared
// again with the same name before another consumer's channel has processed
// the deletion leaves that consumer attached to nothing, never cancelled
// (seen with quorum queues on RabbitMQ 3.10 when the new declaration
// follows within a few milliseconds).
const resubscribeInterval = time.Second

// Consume opens the consumer channel on c and starts consuming t.Queue.
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
	pub, err := newPublisher(ch, c.confirms)
	if err != nil {
		return fail(err)
	}
	// Registered before consuming: the library reports a basic.cancel here
	// before it closes the subscription's delivery channel.
	cancels := ch.NotifyCancel(make(chan string, 16))
	cons := &Consumer{Channel: ch, Guard: c.Epochs.Guard(ch), Publisher: pub, tag: tag,
		topo: t, conn: c, log: c.log, stop: make(chan struct{})}
	in, err := cons.subscribe()
	if err != nil {
		return fail(err)
	}
	out := make(chan amqp.Delivery)
	cons.Deliveries = out
	go cons.forward(in, out, cancels)
	return cons, nil
}

// subscribe declares the topology on the channel and consumes the queue.
func (c *Consumer) subscribe() (<-chan amqp.Delivery, error) {
	if err := c.topo.Declare(c.Channel); err != nil {
		return nil, err
	}
	in, err := c.Channel.Consume(c.topo.Queue, c.tag, false, false, false, false, nil)
	if err != nil {
		return nil, fmt.Errorf("amqp consume %s: %w", c.topo.Queue, err)
	}
	c.subscribed.Store(true)
	return in, nil
}

// forward copies deliveries from the library's subscription to out, in
// order, and subscribes again when the broker cancelled the consumer,
// trying while the connection recovers too. It closes out when the
// subscription ended otherwise: Cancel (deliveries it holds then are left
// unacked, as the loop would leave them), or the connection is beyond
// recovery.
func (c *Consumer) forward(in <-chan amqp.Delivery, out chan<- amqp.Delivery, cancels <-chan string) {
	defer close(out)
	for {
		for d := range in {
			select {
			case out <- d:
			case <-c.stop:
				return
			}
		}
		c.subscribed.Store(false)
		if !c.cancelledByBroker(cancels) {
			return
		}
		c.log.Warn("amqp consumer cancelled by the broker (queue deleted?); declaring the topology and consuming again",
			"queue", c.topo.Queue, "tag", c.tag)
		for {
			select {
			case <-c.stop:
				return
			case <-c.conn.gone:
				return
			case <-time.After(resubscribeInterval):
			}
			var err error
			if in, err = c.subscribe(); err == nil {
				c.log.Info("amqp consumer subscribed again", "queue", c.topo.Queue, "tag", c.tag)
				break
			}
			c.log.Warn("amqp subscribe again", "queue", c.topo.Queue, "err", err, "retry_in", resubscribeInterval.String())
		}
	}
}

// cancelledByBroker reports whether the subscription that just ended was
// cancelled by the broker (and not by Cancel). The library closes cancels
// when the channel closes for good.
func (c *Consumer) cancelledByBroker(cancels <-chan string) bool {
	byBroker := false
	for {
		select {
		case tag, open := <-cancels:
			if !open {
				return false
			}
			byBroker = byBroker || tag == c.tag
		default:
			return byBroker && !c.cancelled.Load()
		}
	}
}

// Ack acknowledges one delivery, and with multiple every outstanding
// delivery of the channel below it too.
func (c *Consumer) Ack(tag uint64, multiple bool) error { return c.Channel.Ack(tag, multiple) }

// Nack rejects one delivery; requeue false dead-letters it.
func (c *Consumer) Nack(tag uint64, requeue bool) error { return c.Channel.Nack(tag, false, requeue) }

// Cancel stops the consumer: the broker sends no new deliveries, and
// Deliveries closes once those already received are read. Deliveries not
// yet settled stay unacked until the channel closes, then the broker
// requeues them.
func (c *Consumer) Cancel() error {
	if c.cancelled.CompareAndSwap(false, true) {
		close(c.stop)
	}
	return c.Channel.Cancel(c.tag, false)
}

// Alive reports whether the channel is open and its consumer subscribed.
func (c *Consumer) Alive() bool { return !c.Channel.IsClosed() && c.subscribed.Load() }
