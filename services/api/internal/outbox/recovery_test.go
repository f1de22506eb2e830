package outbox

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/internal/testenv/confirmtest"
	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/pkg/message/messagetest"
	amqp "github.com/rabbitmq/amqp091-go"
)

// TestConfirmsExactAcrossChannelRecovery: publishers publish concurrently
// to an exchange whose queue rejects when full (x-max-length,
// x-overflow reject-publish: the broker nacks what it does not take), a
// slow consumer keeps the queue near full so that acks and nacks
// interleave, and the publishing channel is closed by a channel error
// (a passive declare of a missing exchange) again and again. Whatever
// Publish reports as published must be in the queue: a publish that went
// out without its confirm, or a confirm that settled another message,
// would report a nacked message as published.
func TestConfirmsExactAcrossChannelRecovery(t *testing.T) {
	url := testenv.AMQPURL(t)
	name := testenv.Name(t, "recovery")
	topo := message.Topology{Exchange: name, Queue: name + ".charge", DeliveryLimit: message.DefaultDeliveryLimit}
	limited := name + ".limited"
	t.Cleanup(func() { messagetest.DeleteTopology(url, topo, limited) })

	p := NewPublisher(PublisherConfig{URL: url, Topology: topo, ConnectionName: name, RetryInterval: 20 * time.Millisecond},
		slog.New(slog.DiscardHandler))
	p.Start()
	t.Cleanup(func() { _ = p.Close() })
	waitReady(t, p)

	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	admin, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	// Only the limited queue decides: the charge queue goes, so a
	// message is confirmed exactly when the limited queue took it.
	if _, err := admin.QueueDelete(topo.Queue, false, false, false); err != nil {
		t.Fatal(err)
	}
	confirmtest.Run(t, confirmtest.Config{
		URL: url, Queue: limited, Exchange: topo.Exchange, RoutingKey: message.RoutingKey,
		Publishers: 16, Timeout: 2 * time.Second,
		Publish: func(ctx context.Context, _ int, id string) error {
			return p.Publish(ctx, Message{PaymentID: id, RoutingKey: message.RoutingKey, Payload: []byte(`{}`)})
		},
		Break:      func() bool { return breakChannel(p, "no-such-exchange-"+name) },
		BreakEvery: 50 * time.Millisecond,
	})
}

// waitReady waits until p reports its connection and channel open.
func waitReady(t *testing.T, p *Publisher) {
	t.Helper()
	waitFor(t, "the publisher to connect", func() bool { return p.Check(t.Context()) == nil })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// breakChannel makes the broker close p's publishing channel with a
// channel error (404 on a passive declare of a missing exchange), when it
// is open (a call during the library's reopen would break the reopen
// instead); it reports whether it did.
func breakChannel(p *Publisher, missing string) bool {
	p.mu.Lock()
	gate := p.gate
	p.mu.Unlock()
	if gate == nil {
		return false
	}
	ran, err := gate.Do(func(ch *amqp.Channel) error {
		return ch.ExchangeDeclarePassive(missing, amqp.ExchangeTopic, true, false, false, false, nil)
	})
	return ran && err != nil
}
