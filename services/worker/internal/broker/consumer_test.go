package broker

import (
	"io"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/message"
)

// TestConsumerSurvivesQueueDeletion deletes the consumed queue a few
// times: each time the broker cancels the consumer, and Consumer declares
// the topology again and consumes anew on the same Deliveries channel. A
// message published after each deletion arrives, and settles. Closing the
// channel then closes Deliveries.
func TestConsumerSurvivesQueueDeletion(t *testing.T) {
	url, topo, conn := dialTest(t)
	cons, err := conn.Consume(topo, 4, "broker-test")
	if err != nil {
		t.Fatal(err)
	}
	admin := adminConn(t, url, topo)
	ch, err := admin.Channel()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := ch.QueueDelete(topo.Queue, false, false, false); err != nil {
			t.Fatal(err)
		}
		id := "m" + strconv.Itoa(i)
		deadline := time.Now().Add(10 * time.Second)
		for { // publish until a queue takes it: the consumer declares it again
			q, err := ch.QueueDeclarePassive(topo.Queue, true, false, false, false, nil)
			if err == nil && q.Consumers == 1 {
				break
			}
			if err != nil { // a failed passive declare closes the channel
				if ch, err = admin.Channel(); err != nil {
					t.Fatal(err)
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("deletion %d: the queue has no consumer again after 10s", i+1)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := ch.Publish(topo.Exchange, message.RoutingKey, true, false, amqp.Publishing{MessageId: id}); err != nil {
			t.Fatal(err)
		}
		select {
		case d, ok := <-cons.Deliveries:
			if !ok {
				t.Fatalf("deletion %d: Deliveries closed", i+1)
			}
			if d.MessageId != id {
				t.Errorf("deletion %d: got %q, want %q", i+1, d.MessageId, id)
			}
			if err := cons.Ack(d.DeliveryTag, false); err != nil {
				t.Errorf("ack: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("deletion %d: no delivery within 10s", i+1)
		}
	}
	if !cons.Alive() {
		t.Error("consumer not alive after the deletions")
	}

	// A channel closed for good ends Deliveries (no resubscription).
	if err := cons.Channel.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-cons.Deliveries:
		if ok {
			t.Error("a delivery after the channel closed")
		}
	case <-time.After(5 * time.Second):
		t.Error("Deliveries still open 5s after the channel closed")
	}
}

// TestConsumerMultipleAck checks the broker's side of batched acks: a
// multiple ack settles every delivery up to its tag, and nothing else;
// the deliveries left unacked come back after the channel closes, and
// after a multiple ack of all of them nothing comes back.
func TestConsumerMultipleAck(t *testing.T) {
	url, topo, conn := dialTest(t)
	admin := adminConn(t, url, topo)
	const n = 10
	cons, err := conn.Consume(topo, n, "broker-test")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := admin.Channel()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := pub.Publish(topo.Exchange, message.RoutingKey, true, false, amqp.Publishing{MessageId: "m" + strconv.Itoa(i+1)}); err != nil {
			t.Fatal(err)
		}
	}
	receive := func(from <-chan amqp.Delivery, k int) []amqp.Delivery {
		t.Helper()
		var got []amqp.Delivery
		for len(got) < k {
			select {
			case d := <-from:
				got = append(got, d)
			case <-time.After(10 * time.Second):
				t.Fatalf("received %d deliveries within 10s, want %d", len(got), k)
			}
		}
		return got
	}
	for _, d := range receive(cons.Deliveries, n) {
		if d.MessageId != "m"+strconv.FormatUint(d.DeliveryTag, 10) {
			t.Fatalf("delivery tag %d carries %q", d.DeliveryTag, d.MessageId)
		}
	}
	// Settle 1–4 with one multiple ack and 6 alone; 5 and 7–10 stay unacked.
	if err := cons.Ack(4, true); err != nil {
		t.Fatal(err)
	}
	if err := cons.Ack(6, false); err != nil {
		t.Fatal(err)
	}
	if err := cons.Channel.Close(); err != nil {
		t.Fatal(err)
	}

	ch, err := admin.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Qos(n, 0, false); err != nil {
		t.Fatal(err)
	}
	again, err := ch.Consume(topo.Queue, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var last uint64
	for _, d := range receive(again, 5) {
		if !d.Redelivered {
			t.Errorf("%s not marked redelivered", d.MessageId)
		}
		ids = append(ids, d.MessageId)
		last = max(last, d.DeliveryTag)
	}
	slices.Sort(ids)
	if diff := cmp.Diff([]string{"m10", "m5", "m7", "m8", "m9"}, ids); diff != "" {
		t.Errorf("redelivered after the channel closed (-want +got):\n%s", diff)
	}
	select {
	case d := <-again:
		t.Errorf("%s delivered again although it was acked", d.MessageId)
	case <-time.After(200 * time.Millisecond):
	}
	if err := ch.Ack(last, true); err != nil {
		t.Fatal(err)
	}
	if err := ch.Close(); err != nil {
		t.Fatal(err)
	}
	ch, err = admin.Channel()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		q, err := ch.QueueDeclarePassive(topo.Queue, true, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if q.Messages == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages left after a multiple ack of all of them", q.Messages)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// adminConn dials url for a test's own look at the broker; at the end of
// the test it deletes topo's queues and exchanges and closes.
func adminConn(t *testing.T, url string, topo Topology) *amqp.Connection {
	t.Helper()
	admin, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if ch, err := admin.Channel(); err == nil {
			ch.QueueDelete(topo.Queue, false, false, false)
			ch.QueueDelete(topo.DeadLetterQueue(), false, false, false)
			ch.ExchangeDelete(topo.Exchange, false, false)
			ch.ExchangeDelete(topo.DeadLetterExchange(), false, false)
		}
		admin.Close()
	})
	return admin
}

// dialTest dials the harness's RabbitMQ for a test of its own topology
// (named for the test) and closes the connection at the end of the test.
func dialTest(t *testing.T) (url string, topo Topology, conn *Conn) {
	t.Helper()
	testenv.Integration(t)
	url = testenv.AMQPURL(t)
	name := testenv.Name(t, "brk")
	topo = Topology{Topology: message.Topology{Exchange: name + ".x", Queue: name + ".q", DeliveryLimit: 5}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	conn, err := Dial(url, DialConfig{Name: "broker-test", RetryInterval: 100 * time.Millisecond, MaxRetries: 10, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return url, topo, conn
}
