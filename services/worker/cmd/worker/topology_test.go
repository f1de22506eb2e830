package main

import (
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/services/worker/internal/broker"
)

// The broker-side paths of the topology, on a real RabbitMQ: a retry queue
// returns its message to the main queue when the TTL ends; a message
// returned more often than the delivery limit, or rejected, is
// dead-lettered into the DLQ; declaring again is a no-op.
func TestTopologyOnRabbitMQ(t *testing.T) {
	t.Parallel()
	testenv.Integration(t)
	waitAMQP(t)
	url := testenv.AMQPURL(t)
	name := testenv.Name(t, "topo")
	e := &env{t: t, amqpURL: url, topo: broker.Topology{Topology: message.Topology{Exchange: name + ".x", Queue: name + ".q", DeliveryLimit: 2},
		RetryDelays: []time.Duration{50 * time.Millisecond, 5 * time.Second}}}
	e.declare()
	t.Cleanup(e.deleteTopology)
	e.declare() // idempotent

	conn := dialAMQP(t, url)
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	pub := newPublisher(t, url)
	pub.publish(t, "", e.topo.RetryQueue(0), amqp.Publishing{MessageId: "retried", DeliveryMode: amqp.Persistent})
	get := func(queue string) amqp.Delivery {
		t.Helper()
		var d amqp.Delivery
		eventually(t, 5*time.Second, func() string {
			var ok bool
			if d, ok, err = ch.Get(queue, false); err != nil || !ok {
				return "nothing in " + queue
			}
			return ""
		})
		return d
	}
	if d := get(e.topo.Queue); d.MessageId != "retried" {
		t.Fatalf("main queue got %q, want the retried message", d.MessageId)
	} else {
		_ = d.Ack(false)
	}

	pub.publish(t, e.topo.Exchange, message.RoutingKey, amqp.Publishing{MessageId: "looping", DeliveryMode: amqp.Persistent})
	for i := 0; i <= e.topo.DeliveryLimit; i++ {
		d := get(e.topo.Queue)
		_ = d.Nack(false, true)
	}
	d := get(e.topo.DeadLetterQueue())
	if d.MessageId != "looping" {
		t.Errorf("DLQ got %q, want the looping message", d.MessageId)
	}
	if r, _ := d.Headers["x-first-death-reason"].(string); r != "delivery_limit" {
		t.Errorf("x-first-death-reason = %q, want delivery_limit", r)
	}
	_ = d.Ack(false)

	pub.publish(t, e.topo.Exchange, message.RoutingKey, amqp.Publishing{MessageId: "rejected", DeliveryMode: amqp.Persistent})
	_ = get(e.topo.Queue).Reject(false)
	if d := get(e.topo.DeadLetterQueue()); d.MessageId != "rejected" {
		t.Errorf("DLQ got %q, want the rejected message", d.MessageId)
	}
}

// A message waiting in a retry queue when RabbitMQ restarts, whose delay
// ends while the broker is down, arrives in the main queue afterwards. With
// classic retry queues it did not: at the boot they dead-lettered the
// expired message before the quorum queue had a leader, and RabbitMQ
// dropped it (at-most-once dead-lettering). It restarts the shared
// RabbitMQ, so it does not run in parallel.
func TestRetryQueueSurvivesRabbitMQRestart(t *testing.T) {
	testenv.Integration(t)
	waitAMQP(t)
	url := testenv.AMQPURL(t)
	name := testenv.Name(t, "topo")
	e := &env{t: t, amqpURL: url, topo: broker.Topology{Topology: message.Topology{Exchange: name + ".x", Queue: name + ".q", DeliveryLimit: 5},
		RetryDelays: []time.Duration{3 * time.Second}}}
	e.declare()
	t.Cleanup(e.deleteTopology)

	pub := newPublisher(t, url)
	start := time.Now()
	want := map[string]bool{}
	for i := range 5 {
		id := fmt.Sprintf("waiting-%d", i)
		want[id] = true
		pub.publish(t, "", e.topo.RetryQueue(0), amqp.Publishing{MessageId: id, DeliveryMode: amqp.Persistent})
	}
	testenv.Harness(t, "restart", "rabbitmq")
	if took := time.Since(start); took < e.topo.RetryDelays[0] {
		t.Fatalf("the restart took %s, less than the delay: the messages did not expire while the broker was down", took)
	}

	got := map[string]bool{}
	eventually(t, 30*time.Second, func() string {
		for _, d := range e.drain(e.topo.Queue) {
			got[d.MessageId] = true
		}
		if len(got) < len(want) {
			return fmt.Sprintf("%d of %d retried messages arrived in the main queue: %v", len(got), len(want), got)
		}
		return ""
	})
	if n := e.queueDepth(e.topo.RetryQueue(0)); n != 0 {
		t.Errorf("%d messages left in the retry queue", n)
	}
}
