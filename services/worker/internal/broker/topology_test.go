package broker

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/pkg/message/messagetest"
)

func TestTopologyDeclare(t *testing.T) {
	topo := Topology{Topology: message.Topology{Exchange: "payments", Queue: "payments.charge", DeliveryLimit: 20},
		RetryDelays: []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}}
	var r messagetest.Recorder
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
	if diff := cmp.Diff(want, r.Calls); diff != "" {
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
