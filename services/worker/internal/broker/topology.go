package broker

import (
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// RoutingKey is the routing key of a payment.initiated message.
const RoutingKey = "payment.initiated"

// Topology names the exchange and queues the worker consumes from; every
// queue name is derived from Queue, so tests can use unique names.
//
//	Exchange (topic) --payment.initiated--> Queue (quorum, delivery limit, DLX)
//	Queue --rejected / over the delivery limit--> Queue.dlx (fanout) --> Queue.dlq
//	retry: publish to Queue.retry.v2.<delay> (quorum, TTL <delay>)
//	       --expired, dead-lettered at least once--> "" exchange --> Queue
type Topology struct {
	Exchange      string
	Queue         string
	RetryDelays   []time.Duration // strictly increasing
	DeliveryLimit int             // x-delivery-limit of Queue
}

// DeadLetterExchange returns the name of the fanout exchange Queue
// dead-letters into.
func (t Topology) DeadLetterExchange() string { return t.Queue + ".dlx" }

// DeadLetterQueue returns the name of the dead-letter queue.
func (t Topology) DeadLetterQueue() string { return t.Queue + ".dlq" }

// RetryQueue returns the name of the i-th retry queue, e.g.
// payments.charge.retry.v2.5s. The v2 names the quorum retry queues: the
// classic ones of before were called payments.charge.retry.5s, and a
// queue cannot be declared again with another type or other arguments.
func (t Topology) RetryQueue(i int) string {
	return t.Queue + ".retry.v2." + t.RetryDelays[i].String()
}

// declarer is the part of *amqp.Channel that Declare uses.
type declarer interface {
	ExchangeDeclare(name, kind string, durable, autoDelete, internal, noWait bool, args amqp.Table) error
	QueueDeclare(name string, durable, autoDelete, exclusive, noWait bool, args amqp.Table) (amqp.Queue, error)
	QueueBind(name, key, exchange string, noWait bool, args amqp.Table) error
}

// Declare declares the whole topology on ch. It is idempotent: declaring the
// same topology again changes nothing. A queue that exists with other
// arguments makes the broker close ch (PRECONDITION_FAILED) and Declare
// fails. On a recovering connection the library records every declaration
// and repeats it after a reconnect.
func (t Topology) Declare(ch declarer) error {
	if err := ch.ExchangeDeclare(t.Exchange, amqp.ExchangeTopic, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange %s: %w", t.Exchange, err)
	}
	if err := ch.ExchangeDeclare(t.DeadLetterExchange(), amqp.ExchangeFanout, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange %s: %w", t.DeadLetterExchange(), err)
	}
	queues := []struct {
		name string
		args amqp.Table
	}{
		{t.Queue, t.queueArgs()},
		{t.DeadLetterQueue(), amqp.Table{amqp.QueueTypeArg: amqp.QueueTypeQuorum}},
	}
	for i := range t.RetryDelays {
		queues = append(queues, struct {
			name string
			args amqp.Table
		}{t.RetryQueue(i), t.retryArgs(i)})
	}
	for _, q := range queues {
		if _, err := ch.QueueDeclare(q.name, true, false, false, false, q.args); err != nil {
			return fmt.Errorf("declare queue %s: %w", q.name, err)
		}
	}
	if err := ch.QueueBind(t.Queue, RoutingKey, t.Exchange, false, nil); err != nil {
		return fmt.Errorf("bind %s to %s: %w", t.Queue, t.Exchange, err)
	}
	if err := ch.QueueBind(t.DeadLetterQueue(), "", t.DeadLetterExchange(), false, nil); err != nil {
		return fmt.Errorf("bind %s to %s: %w", t.DeadLetterQueue(), t.DeadLetterExchange(), err)
	}
	return nil
}

// queueArgs are the main queue's arguments: a quorum queue that
// dead-letters rejected messages, and messages returned more than
// DeliveryLimit times, to the dead-letter exchange.
func (t Topology) queueArgs() amqp.Table {
	return amqp.Table{
		amqp.QueueTypeArg:        amqp.QueueTypeQuorum,
		"x-delivery-limit":       int64(t.DeliveryLimit),
		"x-dead-letter-exchange": t.DeadLetterExchange(),
	}
}

// retryArgs make retry queue i a waiting room: nothing consumes it, every
// message expires after RetryDelays[i] and is dead-lettered through the
// default exchange straight back into Queue.
//
// It is a quorum queue with at-least-once dead-lettering (RabbitMQ 3.10+,
// which requires the reject-publish overflow): an expired message stays in
// the retry queue until Queue has confirmed it, and the broker tries again
// while Queue is unavailable. A classic queue dead-letters at most once: at
// a broker restart it dead-lettered the messages that expired meanwhile
// before Queue had a leader, and RabbitMQ dropped them.
func (t Topology) retryArgs(i int) amqp.Table {
	return amqp.Table{
		amqp.QueueTypeArg:           amqp.QueueTypeQuorum,
		amqp.QueueMessageTTLArg:     t.RetryDelays[i].Milliseconds(),
		"x-dead-letter-exchange":    "",
		"x-dead-letter-routing-key": t.Queue,
		"x-dead-letter-strategy":    "at-least-once",
		amqp.QueueOverflowArg:       amqp.QueueOverflowRejectPublish,
	}
}
