package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/services/api/internal/outbox"
	"github.com/oncepay/oncepay/services/api/migrations/migrationstest"
	amqp "github.com/rabbitmq/amqp091-go"
)

// TestUnroutableIsNotPublished: with no queue bound to the exchange (the
// charge queue was deleted after the api connected), RabbitMQ confirms a
// publish and drops it. The outbox must not count that as published: the
// row stays unpublished with the return as its last error. The api then
// declares the queue again, the next relay pass publishes the row, and a
// consumer of the charge queue gets the message.
func TestUnroutableIsNotPublished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrationstest.NewPool(t)
	insertRows(t, pool, row{id: "pay_unroutable", status: "pending"})
	msgs := outboxMessages(t, pool)
	amqpURL := testenv.AMQPURL(t)
	topo := testTopology(t, amqpURL)
	box, _ := newSweeper(t, pool, topo, outbox.Config{PublishTimeout: 5 * time.Second})

	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclarePassive(topo.Queue, true, false, false, false, topo.QueueArgs()); err != nil {
		t.Fatalf("the api did not declare the charge queue when it connected: %v", err)
	}
	if _, err := ch.QueueDelete(topo.Queue, false, false, false); err != nil {
		t.Fatal(err)
	}

	box.Send(ctx, msgs[0])
	if err := box.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	var published bool
	var lastError string
	if err := pool.QueryRow(ctx, `SELECT published_at IS NOT NULL, coalesce(last_error, '') FROM outbox WHERE id = $1`,
		msgs[0].ID).Scan(&published, &lastError); err != nil {
		t.Fatal(err)
	}
	if published || !strings.Contains(lastError, "returned") {
		t.Fatalf("after a publish no queue took: published %t, last_error %q; want unpublished, returned", published, lastError)
	}

	// The return made the api declare the topology again; the relay
	// publishes the row once the queue is back.
	waitFor(t, "the relay to publish the row", func() bool {
		n, err := box.RelayOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	})
	d, ok, err := ch.Get(topo.Queue, true)
	switch {
	case err != nil:
		t.Fatal(err)
	case !ok:
		t.Fatal("the charge queue is empty after the relay published")
	case d.MessageId != "pay_unroutable":
		t.Errorf("got message %q, want pay_unroutable", d.MessageId)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM outbox WHERE published_at IS NULL`); n != 0 {
		t.Errorf("%d rows unpublished after the relay", n)
	}
}

// TestPublishReturnsMatchTheirMessages publishes routable and unroutable
// messages concurrently on one Publisher: exactly the unroutable ones fail
// with ErrReturned, so a return is matched to its own publish.
func TestPublishReturnsMatchTheirMessages(t *testing.T) {
	t.Parallel()
	amqpURL := testenv.AMQPURL(t)
	topo := testTopology(t, amqpURL)
	pub := outbox.NewPublisher(outbox.PublisherConfig{URL: amqpURL, Topology: topo, ConnectionName: "returns-test"}, discard)
	pub.Start()
	t.Cleanup(func() { pub.Close() })
	const n = 60
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		m := outbox.Message{PaymentID: fmt.Sprintf("pay_%02d", i), RoutingKey: message.RoutingKey}
		if i%3 == 0 {
			m.RoutingKey = "nowhere"
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			errs[i] = pub.Publish(ctx, m)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if returned := errors.Is(err, outbox.ErrReturned); returned != (i%3 == 0) || (err != nil && !returned) {
			t.Errorf("pay_%02d (routable %t): Publish() = %v", i, i%3 != 0, err)
		}
	}
}
