// Package messagetest helps test code that declares the payment topology
// without a broker.
package messagetest

import (
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Recorder is a message.Declarer that declares nothing and records each
// call as one line, in call order:
//
//	exchange <name> <kind> durable=<bool>
//	queue <name> durable=<bool> <args>
//	bind <queue> "<key>" <exchange>
//
// Every call succeeds. It is not safe for concurrent use.
type Recorder struct{ Calls []string }

// ExchangeDeclare records "exchange name kind durable=…".
func (r *Recorder) ExchangeDeclare(name, kind string, durable, autoDelete, internal, noWait bool, args amqp.Table) error {
	r.Calls = append(r.Calls, fmt.Sprintf("exchange %s %s durable=%t", name, kind, durable))
	return nil
}

// QueueDeclare records "queue name durable=… args" and returns a queue of
// that name.
func (r *Recorder) QueueDeclare(name string, durable, autoDelete, exclusive, noWait bool, args amqp.Table) (amqp.Queue, error) {
	r.Calls = append(r.Calls, fmt.Sprintf("queue %s durable=%t %v", name, durable, args))
	return amqp.Queue{Name: name}, nil
}

// QueueBind records `bind name "key" exchange`.
func (r *Recorder) QueueBind(name, key, exchange string, noWait bool, args amqp.Table) error {
	r.Calls = append(r.Calls, fmt.Sprintf("bind %s %q %s", name, key, exchange))
	return nil
}
