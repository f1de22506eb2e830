package broker

import (
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

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
	testenv.Integration(t)
	url := testenv.AMQPURL(t)
	name := testenv.Name(t, "brk")
	topo := Topology{Topology: message.Topology{Exchange: name + ".x", Queue: name + ".q", DeliveryLimit: 5}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	conn, err := Dial(url, DialConfig{Name: "broker-test", RetryInterval: 100 * time.Millisecond, MaxRetries: 10, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	cons, err := conn.Consume(topo, 4, "broker-test")
	if err != nil {
		t.Fatal(err)
	}
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
			if err := cons.Ack(d.DeliveryTag); err != nil {
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
