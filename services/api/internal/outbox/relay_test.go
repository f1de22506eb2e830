package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/pkg/message/messagetest"
	"github.com/oncepay/oncepay/services/api/internal/metrics"
	"github.com/oncepay/oncepay/services/api/internal/outbox"
	"github.com/oncepay/oncepay/services/api/migrations/migrationstest"
	"github.com/prometheus/client_golang/prometheus"
	amqp "github.com/rabbitmq/amqp091-go"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestRelayReplicasPublishEachRowOnce runs two relays, as two replicas
// would, over the same backlog: every row is published exactly once and
// marked.
func TestRelayReplicasPublishEachRowOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrationstest.NewPool(t)
	const rows = 40
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for i := range rows {
			id := fmt.Sprintf("pay_%02d", i)
			if _, err := tx.Exec(ctx, `INSERT INTO payments (id, merchant_id, idempotency_key, request_fingerprint,
					amount, currency, customer_id, response_status, response_body, created_at, updated_at)
				VALUES ($1, 'm', $1, 'fp', 1, 'EUR', 'c', 202, '{}', now(), now())`, id); err != nil {
				return err
			}
			m, err := outbox.NewPaymentInitiated(message.PaymentInitiated{PaymentID: id, MerchantID: "m",
				IdempotencyKey: id, Amount: 1, Currency: "EUR", CustomerID: "c"})
			if err != nil {
				return err
			}
			if err := outbox.Insert(ctx, tx, &m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	amqpURL := testenv.AMQPURL(t)
	topo := testTopology(t, amqpURL)
	exchange := topo.Exchange
	var relays []*outbox.Outbox
	for i := range 2 {
		pub := outbox.NewPublisher(outbox.PublisherConfig{URL: amqpURL, Topology: topo, ConnectionName: "relay-test"}, discard)
		pub.Start()
		t.Cleanup(func() { pub.Close() })
		m := metrics.New(prometheus.NewRegistry(), fmt.Sprint("r", i))
		relays = append(relays, outbox.New(pool, pub, m, discard, outbox.Config{BatchSize: 5}))
	}
	deliveries := bindAndConsume(t, amqpURL, exchange)

	var passes []func() (int, error)
	for _, r := range relays {
		passes = append(passes, func() (int, error) { return r.RelayOnce(ctx) })
	}
	total := concurrently(t, rows, passes...)
	if total != rows {
		t.Fatalf("relays published %d messages, want %d", total, rows)
	}
	seen := map[string]int{}
	for range rows {
		select {
		case d := <-deliveries:
			seen[d.MessageId]++
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d messages arrived", len(seen))
		}
	}
	select {
	case d := <-deliveries:
		t.Errorf("extra message %s", d.MessageId)
	case <-time.After(300 * time.Millisecond):
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s published %d times", id, n)
		}
	}
	var unpublished int
	pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&unpublished)
	if len(seen) != rows || unpublished != 0 {
		t.Errorf("%d distinct messages, %d rows unpublished; want %d and 0", len(seen), unpublished, rows)
	}
}

// testTopology returns a topology of the test's own names, deleted at
// cleanup.
func testTopology(t *testing.T, amqpURL string) message.Topology {
	t.Helper()
	name := testenv.Name(t, "payments")
	topo := message.Topology{Exchange: name, Queue: name + ".charge", DeliveryLimit: message.DefaultDeliveryLimit}
	t.Cleanup(func() { messagetest.DeleteTopology(amqpURL, topo) })
	return topo
}

// bindAndConsume binds a queue of its own to exchange and returns its
// deliveries.
func bindAndConsume(t *testing.T, amqpURL, exchange string) <-chan amqp.Delivery {
	t.Helper()
	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.ExchangeDelete(exchange, false, false) })
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(q.Name, message.RoutingKey, exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	d, err := ch.Consume(q.Name, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestPublisherNotConnected: with no broker, Publish fails at once with
// ErrNotConnected and Check reports it; Close ends the background dialling.
func TestPublisherNotConnected(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	pub := outbox.NewPublisher(outbox.PublisherConfig{URL: "amqp://guest:guest@" + addr + "/", Topology: message.Topology{Exchange: "x", Queue: "q"},
		RetryInterval: 50 * time.Millisecond}, discard)
	pub.Start()
	start := time.Now()
	err = pub.Publish(context.Background(), outbox.Message{PaymentID: "pay_1", RoutingKey: "payment.initiated"})
	if !errors.Is(err, outbox.ErrNotConnected) || time.Since(start) > 100*time.Millisecond {
		t.Errorf("Publish() = %v after %s, want ErrNotConnected at once", err, time.Since(start))
	}
	if err := pub.Check(context.Background()); !errors.Is(err, outbox.ErrNotConnected) {
		t.Errorf("Check() = %v, want ErrNotConnected", err)
	}
	time.Sleep(150 * time.Millisecond) // a few background attempts
	done := make(chan struct{})
	go func() {
		pub.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(6 * time.Second):
		t.Fatal("Close did not return")
	}
}
