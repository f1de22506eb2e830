package message

import (
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Defaults of the topology's names and delivery limit.
const (
	DefaultExchange      = "payments"
	DefaultQueue         = "payments.charge"
	DefaultDeliveryLimit = 20
)

// Topology is the part of the RabbitMQ topology that both services
// declare, so that whichever connects first (or again, after the broker
// lost its definitions or the queue was deleted) creates it, and a
// payment.initiated message always has a queue to go to:
//
//	Exchange (topic) --payment.initiated--> Queue (quorum, delivery limit, DLX)
//	Queue --rejected / over the delivery limit--> Queue.dlx (fanout) --> Queue.dlq
//
// Both services must use the same values: RabbitMQ refuses to declare an
// existing queue with other arguments (PRECONDITION_FAILED, which closes
// the channel). The worker's retry queues are its own (it alone publishes
// to them).
type Topology struct {
	Exchange      string
	Queue         string
	DeliveryLimit int // x-delivery-limit of Queue
}

// DeadLetterExchange returns the name of the fanout exchange Queue
// dead-letters into.
func (t Topology) DeadLetterExchange() string { return t.Queue + ".dlx" }

// DeadLetterQueue returns the name of the dead-letter queue.
func (t Topology) DeadLetterQueue() string { return t.Queue + ".dlq" }

// QueueArgs are Queue's arguments: a quorum queue that dead-letters
// rejected messages, and messages returned more than DeliveryLimit times,
// to the dead-letter exchange.
func (t Topology) QueueArgs() amqp.Table {
	return amqp.Table{
		amqp.QueueTypeArg:        amqp.QueueTypeQuorum,
		"x-delivery-limit":       int64(t.DeliveryLimit),
		"x-dead-letter-exchange": t.DeadLetterExchange(),
	}
}

// Declarer is the part of *amqp.Channel that Declare uses.
type Declarer interface {
	ExchangeDeclare(name, kind string, durable, autoDelete, internal, noWait bool, args amqp.Table) error
	QueueDeclare(name string, durable, autoDelete, exclusive, noWait bool, args amqp.Table) (amqp.Queue, error)
	QueueBind(name, key, exchange string, noWait bool, args amqp.Table) error
}

// Declare declares the exchange, the dead-letter exchange, Queue, the
// dead-letter queue and their bindings on ch, all durable. It is
// idempotent. A queue that exists with other arguments makes the broker
// close ch (PRECONDITION_FAILED) and Declare fails; it stops at the first
// error.
func (t Topology) Declare(ch Declarer) error {
	if err := ch.ExchangeDeclare(t.Exchange, amqp.ExchangeTopic, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange %s: %w", t.Exchange, err)
	}
	if err := ch.ExchangeDeclare(t.DeadLetterExchange(), amqp.ExchangeFanout, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange %s: %w", t.DeadLetterExchange(), err)
	}
	if _, err := ch.QueueDeclare(t.Queue, true, false, false, false, t.QueueArgs()); err != nil {
		return fmt.Errorf("declare queue %s: %w", t.Queue, err)
	}
	dlq := amqp.Table{amqp.QueueTypeArg: amqp.QueueTypeQuorum}
	if _, err := ch.QueueDeclare(t.DeadLetterQueue(), true, false, false, false, dlq); err != nil {
		return fmt.Errorf("declare queue %s: %w", t.DeadLetterQueue(), err)
	}
	if err := ch.QueueBind(t.Queue, RoutingKey, t.Exchange, false, nil); err != nil {
		return fmt.Errorf("bind %s to %s: %w", t.Queue, t.Exchange, err)
	}
	if err := ch.QueueBind(t.DeadLetterQueue(), "", t.DeadLetterExchange(), false, nil); err != nil {
		return fmt.Errorf("bind %s to %s: %w", t.DeadLetterQueue(), t.DeadLetterExchange(), err)
	}
	return nil
}
