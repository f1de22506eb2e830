package broker

import (
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/pkg/message"
)

// Topology is the shared topology (message.Topology: the exchange, Queue
// and its dead-letter path, which the api declares too) plus the worker's
// own retry queues. Every queue name is derived from Queue, so tests can
// use unique names.
//
//	Exchange (topic) --payment.initiated--> Queue (quorum, delivery limit, DLX)
//	Queue --rejected / over the delivery limit--> Queue.dlx (fanout) --> Queue.dlq
//	retry: publish to Queue.retry.v2.<delay> (quorum, TTL <delay>)
//	       --expired, dead-lettered at least once--> "" exchange --> Queue
type Topology struct {
	message.Topology
	RetryDelays []time.Duration // strictly increasing
}

// RetryQueue returns the name of the i-th retry queue, e.g.
// payments.charge.retry.v2.5s. The v2 names the quorum retry queues: the
// classic ones of before were called payments.charge.retry.5s, and a
// queue cannot be declared again with another type or other arguments.
func (t Topology) RetryQueue(i int) string {
	return t.Queue + ".retry.v2." + t.RetryDelays[i].String()
}

// Declare declares the whole topology on ch: the shared part
// (message.Topology.Declare), then the retry queues. It is idempotent:
// declaring the same topology again changes nothing. A queue that exists
// with other arguments makes the broker close ch (PRECONDITION_FAILED) and
// Declare fails. On a recovering connection the library records every
// declaration and repeats it after a reconnect.
func (t Topology) Declare(ch message.Declarer) error {
	if err := t.Topology.Declare(ch); err != nil {
		return err
	}
	for i := range t.RetryDelays {
		if _, err := ch.QueueDeclare(t.RetryQueue(i), true, false, false, false, t.retryArgs(i)); err != nil {
			return fmt.Errorf("declare queue %s: %w", t.RetryQueue(i), err)
		}
	}
	return nil
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
