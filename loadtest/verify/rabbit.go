package verify

import (
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Queues names the worker's queues: the main queue, its retry queues and
// the dead-letter queue.
type Queues struct {
	Main       string
	Retry      []string
	DeadLetter string
}

// DefaultQueues returns the names the worker derives from queue and its
// retry delays: <queue>, <queue>.retry.v2.<delay>, <queue>.dlq.
func DefaultQueues(queue string, retryDelays []time.Duration) Queues {
	q := Queues{Main: queue, DeadLetter: queue + ".dlq"}
	for _, d := range retryDelays {
		q.Retry = append(q.Retry, queue+".retry.v2."+d.String())
	}
	return q
}

func (q Queues) all() []string {
	return append(append([]string{q.Main}, q.Retry...), q.DeadLetter)
}

// queueDepths declares each queue passively and returns its depth; a queue
// that does not exist is reported Missing.
func queueDepths(conn *amqp.Connection, names []string) ([]Queue, error) {
	out := make([]Queue, 0, len(names))
	for _, name := range names {
		ch, err := conn.Channel()
		if err != nil {
			return nil, fmt.Errorf("amqp channel: %w", err)
		}
		q, err := ch.QueueDeclarePassive(name, true, false, false, false, nil)
		var aerr *amqp.Error
		switch {
		case errors.As(err, &aerr) && aerr.Code == amqp.NotFound:
			out = append(out, Queue{Name: name, Missing: true})
			continue // the broker closed the channel
		case err != nil:
			_ = ch.Close()
			return nil, fmt.Errorf("queue %s: %w", name, err)
		}
		_ = ch.Close()
		out = append(out, Queue{Name: name, Messages: q.Messages, Consumers: q.Consumers})
	}
	return out, nil
}

// deadLetters reads up to limit messages of the dead-letter queue without
// consuming them: they are fetched unacknowledged and returned to the queue
// when the channel closes.
func deadLetters(conn *amqp.Connection, queue string, limit int) ([]DeadLetter, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("amqp channel: %w", err)
	}
	defer ch.Close()
	var out []DeadLetter
	for len(out) < limit {
		d, ok, err := ch.Get(queue, false)
		if err != nil {
			var aerr *amqp.Error
			if errors.As(err, &aerr) && aerr.Code == amqp.NotFound {
				return out, nil
			}
			return nil, fmt.Errorf("read %s: %w", queue, err)
		}
		if !ok {
			break
		}
		out = append(out, DeadLetter{MessageID: d.MessageId, Reason: deathReason(d.Headers)})
	}
	return out, nil
}

// deathReason returns why a message was dead-lettered: the worker's own
// x-dead-letter-reason, or RabbitMQ's x-first-death-reason or x-death.
func deathReason(h amqp.Table) string {
	if r, ok := h["x-dead-letter-reason"].(string); ok {
		return r
	}
	if r, ok := h["x-first-death-reason"].(string); ok {
		return r
	}
	if deaths, ok := h["x-death"].([]any); ok && len(deaths) > 0 {
		if d, ok := deaths[0].(amqp.Table); ok {
			if r, ok := d["reason"].(string); ok {
				return r
			}
		}
	}
	return ""
}
