package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/pkg/message"
)

// recorder is a declarer that records what was declared.
type recorder struct{ calls []string }

func (r *recorder) ExchangeDeclare(name, kind string, durable, autoDelete, internal, noWait bool, args amqp.Table) error {
	r.calls = append(r.calls, fmt.Sprintf("exchange %s %s durable=%t", name, kind, durable))
	return nil
}

func (r *recorder) QueueDeclare(name string, durable, autoDelete, exclusive, noWait bool, args amqp.Table) (amqp.Queue, error) {
	r.calls = append(r.calls, fmt.Sprintf("queue %s durable=%t %v", name, durable, args))
	return amqp.Queue{Name: name}, nil
}

func (r *recorder) QueueBind(name, key, exchange string, noWait bool, args amqp.Table) error {
	r.calls = append(r.calls, fmt.Sprintf("bind %s %q %s", name, key, exchange))
	return nil
}

func TestTopologyDeclare(t *testing.T) {
	topo := Topology{Topology: message.Topology{Exchange: "payments", Queue: "payments.charge", DeliveryLimit: 20},
		RetryDelays: []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}}
	var r recorder
	if err := topo.Declare(&r); err != nil {
		t.Fatal(err)
	}
	const retry = "map[x-dead-letter-exchange: x-dead-letter-routing-key:payments.charge x-dead-letter-strategy:at-least-once "
	want := []string{
		"exchange payments topic durable=true",
		"exchange payments.charge.dlx fanout durable=true",
		"queue payments.charge durable=true map[x-dead-letter-exchange:payments.charge.dlx x-delivery-limit:20 x-queue-type:quorum]",
		"queue payments.charge.dlq durable=true map[x-queue-type:quorum]",
		`bind payments.charge "payment.initiated" payments`,
		`bind payments.charge.dlq "" payments.charge.dlx`,
		"queue payments.charge.retry.v2.1s durable=true " + retry + "x-message-ttl:1000 x-overflow:reject-publish x-queue-type:quorum]",
		"queue payments.charge.retry.v2.5s durable=true " + retry + "x-message-ttl:5000 x-overflow:reject-publish x-queue-type:quorum]",
		"queue payments.charge.retry.v2.30s durable=true " + retry + "x-message-ttl:30000 x-overflow:reject-publish x-queue-type:quorum]",
	}
	if diff := cmp.Diff(want, r.calls); diff != "" {
		t.Errorf("declarations (-want +got):\n%s", diff)
	}
}

func TestTopologyNames(t *testing.T) {
	topo := Topology{Topology: message.Topology{Queue: "q"}, RetryDelays: []time.Duration{100 * time.Millisecond, 90 * time.Second}}
	got := []string{topo.DeadLetterExchange(), topo.DeadLetterQueue(), topo.RetryQueue(0), topo.RetryQueue(1)}
	if diff := cmp.Diff([]string{"q.dlx", "q.dlq", "q.retry.v2.100ms", "q.retry.v2.1m30s"}, got); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
}
