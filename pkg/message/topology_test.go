package message_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/pkg/message/messagetest"
)

func TestTopologyDeclare(t *testing.T) {
	topo := message.Topology{Exchange: message.DefaultExchange, Queue: message.DefaultQueue, DeliveryLimit: message.DefaultDeliveryLimit}
	var r messagetest.Recorder
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
	if diff := cmp.Diff(want, r.Calls); diff != "" {
		t.Errorf("declarations (-want +got):\n%s", diff)
	}
}
