package message_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/pkg/message"
)

// recorder is a Declarer that records what was declared.
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
	topo := message.Topology{Exchange: message.DefaultExchange, Queue: message.DefaultQueue, DeliveryLimit: message.DefaultDeliveryLimit}
	var r recorder
	if err := topo.Declare(&r); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"exchange payments topic durable=true",
		"exchange payments.charge.dlx fanout durable=true",
		"queue payments.charge durable=true map[x-dead-letter-exchange:payments.charge.dlx x-delivery-limit:20 x-queue-type:quorum]",
		"queue payments.charge.dlq durable=true map[x-queue-type:quorum]",
		`bind payments.charge "payment.initiated" payments`,
		`bind payments.charge.dlq "" payments.charge.dlx`,
	}
	if diff := cmp.Diff(want, r.calls); diff != "" {
		t.Errorf("declarations (-want +got):\n%s", diff)
	}
}
