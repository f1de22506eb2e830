package main

import (
	"maps"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/services/worker/internal/broker"
)

// The quorum queue's delivery limit counts the returns of one message, and
// a retry copy (what the consumer loop publishes to a retry queue) is a new
// message whose count starts from zero: a message that is returned once and
// then retried, again and again, is never dead-lettered by the broker.
func TestDeliveryLimitDoesNotCountRetries(t *testing.T) {
	t.Parallel()
	testenv.Integration(t)
	waitAMQP(t)
	url := testenv.AMQPURL(t)
	name := testenv.Name(t, "limit")
	e := &env{t: t, amqpURL: url, topo: broker.Topology{
		Topology:    message.Topology{Exchange: name + ".x", Queue: name + ".q", DeliveryLimit: 1},
		RetryDelays: []time.Duration{20 * time.Millisecond}}}
	e.declare()
	t.Cleanup(e.deleteTopology)

	conn := dialAMQP(t, url)
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	get := func() amqp.Delivery {
		t.Helper()
		var d amqp.Delivery
		eventually(t, 5*time.Second, func() string {
			var ok bool
			if d, ok, err = ch.Get(e.topo.Queue, false); err != nil || !ok {
				return "nothing in the main queue"
			}
			return ""
		})
		return d
	}
	pub := newPublisher(t, url)
	pub.publish(t, e.topo.Exchange, message.RoutingKey, amqp.Publishing{MessageId: "retried", DeliveryMode: amqp.Persistent})
	const cycles = 5 // with one return each, 5 times the limit if the count carried over
	for range cycles {
		_ = get().Nack(false, true) // one return: within the limit
		d := get()
		h := maps.Clone(d.Headers)
		delete(h, "x-delivery-count")
		pub.publish(t, "", e.topo.RetryQueue(0), amqp.Publishing{MessageId: d.MessageId, Headers: h, DeliveryMode: amqp.Persistent})
		_ = d.Ack(false)
	}
	if d := get(); d.MessageId != "retried" {
		t.Errorf("main queue holds %q, want the retried message", d.MessageId)
	}
	if n := e.queueDepth(e.topo.DeadLetterQueue()); n != 0 {
		t.Errorf("%d messages dead-lettered, want 0", n)
	}
}
