package outbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/services/api/internal/metrics"
	"github.com/oncepay/oncepay/services/api/internal/outbox"
	"github.com/oncepay/oncepay/services/api/migrations/migrationstest"
	"github.com/prometheus/client_golang/prometheus"
	amqp "github.com/rabbitmq/amqp091-go"
)

// row describes a payment and its outbox row as the sweeper finds them.
type row struct {
	id          string
	status      string        // payments.status
	age         time.Duration // since the payment was created
	published   time.Duration // since the first confirm; 0: not published
	republished int
	lastSweep   time.Duration // since the sweeper's last publish; 0: never
}

func insertRows(t *testing.T, pool *pgxpool.Pool, rows ...row) {
	t.Helper()
	ctx := context.Background()
	ago := func(d time.Duration) any {
		if d == 0 {
			return nil
		}
		return time.Now().Add(-d)
	}
	for _, r := range rows {
		if _, err := pool.Exec(ctx, `INSERT INTO payments (id, merchant_id, idempotency_key, request_fingerprint,
				amount, currency, customer_id, status, response_status, response_body, created_at, updated_at)
			VALUES ($1, 'm', $1, 'fp', 1, 'EUR', 'c', $2, 202, '{}', $3, $3)`, r.id, r.status, time.Now().Add(-r.age)); err != nil {
			t.Fatal(err)
		}
		m, err := outbox.NewPaymentInitiated(message.PaymentInitiated{PaymentID: r.id, MerchantID: "m",
			IdempotencyKey: r.id, Amount: 1, Currency: "EUR", CustomerID: "c"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO outbox (payment_id, merchant_id, idempotency_key, routing_key, payload,
				created_at, published_at, republished, republished_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, m.PaymentID, m.MerchantID, m.IdempotencyKey, m.RoutingKey, m.Payload,
			time.Now().Add(-r.age), ago(r.published), r.republished, ago(r.lastSweep)); err != nil {
			t.Fatal(err)
		}
	}
}

func newSweeper(t *testing.T, pool *pgxpool.Pool, topo message.Topology, cfg outbox.Config) (*outbox.Outbox, *prometheus.Registry) {
	t.Helper()
	pub := outbox.NewPublisher(outbox.PublisherConfig{URL: testenv.AMQPURL(t), Topology: topo, ConnectionName: "sweep-test"}, discard)
	pub.Start()
	t.Cleanup(func() { pub.Close() })
	reg := prometheus.NewRegistry()
	return outbox.New(pool, pub, metrics.New(reg, "sweep"), discard, cfg), reg
}

// swept returns outbox_published_total{path="sweep"}.
func swept(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "outbox_published_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "path" && l.GetValue() == metrics.PathSweep {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}

// received collects the message ids that arrive within d, or until the
// consumer's channel closes (the ids so far, then: never zero values).
func received(deliveries <-chan amqp.Delivery, d time.Duration) []string {
	var ids []string
	timeout := time.After(d)
	for {
		select {
		case m, ok := <-deliveries:
			if !ok {
				return ids
			}
			ids = append(ids, m.MessageId)
		case <-timeout:
			return ids
		}
	}
}

// TestSweepRepublishesPendingPayments: the sweeper publishes again the
// message of a payment that is still pending long after its message was
// confirmed (a message lost on the broker's side), and nothing else: not
// young payments, settled ones, unpublished rows (the relay's job), rows
// it published again recently, or rows past the limit.
func TestSweepRepublishesPendingPayments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrationstest.NewPool(t)
	const age, limit = 5 * time.Second, 2
	insertRows(t, pool,
		row{id: "pay_lost", status: "pending", age: time.Minute, published: time.Minute},
		row{id: "pay_young", status: "pending", age: time.Second, published: time.Second},
		row{id: "pay_confirmed_late", status: "pending", age: time.Minute, published: time.Second},
		row{id: "pay_settled", status: "succeeded", age: time.Minute, published: time.Minute},
		row{id: "pay_failed", status: "failed", age: time.Minute, published: time.Minute},
		row{id: "pay_unpublished", status: "pending", age: time.Minute},
		row{id: "pay_swept_recently", status: "pending", age: time.Minute, published: time.Minute, republished: 1, lastSweep: time.Second},
		row{id: "pay_exhausted", status: "pending", age: time.Hour, published: time.Hour, republished: limit, lastSweep: time.Hour},
	)
	topo := testTopology(t, testenv.AMQPURL(t))
	sweeper, reg := newSweeper(t, pool, topo, outbox.Config{SweepAge: age, SweepLimit: limit})
	deliveries := bindAndConsume(t, testenv.AMQPURL(t), topo.Exchange)

	var n int
	for deadline := time.Now().Add(10 * time.Second); n == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var err error
		if n, err = sweeper.SweepOnce(ctx); err != nil { // fails fast until the publisher is connected
			t.Fatal(err)
		}
	}
	if n != 1 {
		t.Fatalf("first pass published %d messages, want 1", n)
	}
	if got := received(deliveries, 500*time.Millisecond); fmt.Sprint(got) != "[pay_lost]" {
		t.Fatalf("published %v, want [pay_lost]", got)
	}
	var republished int
	var last time.Time
	if err := pool.QueryRow(ctx, `SELECT republished, republished_at FROM outbox WHERE payment_id = 'pay_lost'`).Scan(&republished, &last); err != nil {
		t.Fatal(err)
	}
	if republished != 1 || time.Since(last) > time.Minute {
		t.Errorf("pay_lost: republished %d at %v, want 1, just now", republished, last)
	}
	if got := swept(t, reg); got != 1 {
		t.Errorf(`outbox_published_total{path="sweep"} = %v, want 1`, got)
	}

	if n, err := sweeper.SweepOnce(ctx); err != nil || n != 0 {
		t.Fatalf("second pass at once: %d, %v; want 0 (its last publish is younger than the age)", n, err)
	}
	// Time passes: the payment is still pending; the sweeper tries once
	// more, reaching the limit, and then stops.
	for i, want := range []int{1, 0} {
		if _, err := pool.Exec(ctx, `UPDATE outbox SET republished_at = now() - interval '1 minute' WHERE payment_id = 'pay_lost'`); err != nil {
			t.Fatal(err)
		}
		if n, err := sweeper.SweepOnce(ctx); err != nil || n != want {
			t.Fatalf("pass %d after the age: %d, %v; want %d", i+3, n, err, want)
		}
	}
	if got := received(deliveries, 300*time.Millisecond); fmt.Sprint(got) != "[pay_lost]" {
		t.Errorf("later passes published %v, want [pay_lost] once more", got)
	}
}

// TestSweepReplicasPublishEachPaymentOnce: two sweepers, as two api
// replicas, over the same stuck payments, in small batches: each payment's
// message is published again exactly once in the round.
func TestSweepReplicasPublishEachPaymentOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrationstest.NewPool(t)
	const stuck = 40
	var rows []row
	for i := range stuck {
		rows = append(rows, row{id: fmt.Sprintf("pay_%02d", i), status: "pending", age: time.Hour, published: time.Hour})
	}
	insertRows(t, pool, rows...)
	topo := testTopology(t, testenv.AMQPURL(t))
	cfg := outbox.Config{SweepAge: time.Minute, SweepLimit: 3, BatchSize: 5}
	a, _ := newSweeper(t, pool, topo, cfg)
	b, _ := newSweeper(t, pool, topo, cfg)
	deliveries := bindAndConsume(t, testenv.AMQPURL(t), topo.Exchange)

	total := concurrently(t, stuck,
		func() (int, error) { return a.SweepOnce(ctx) },
		func() (int, error) { return b.SweepOnce(ctx) })
	if total != stuck {
		t.Fatalf("sweepers published %d messages, want %d", total, stuck)
	}
	seen := map[string]int{}
	for _, id := range received(deliveries, time.Second) {
		seen[id]++
	}
	for _, r := range rows {
		if seen[r.id] != 1 {
			t.Errorf("%s published %d times, want 1", r.id, seen[r.id])
		}
	}
	if got := countRows(t, pool, `SELECT count(*) FROM outbox WHERE republished = 1`); got != stuck {
		t.Errorf("%d rows counted as republished once, want %d", got, stuck)
	}
	for _, s := range []*outbox.Outbox{a, b} {
		if n, err := s.SweepOnce(ctx); err != nil || n != 0 {
			t.Errorf("another pass in the same round: %d, %v; want 0", n, err)
		}
	}
}

func countRows(t *testing.T, pool *pgxpool.Pool, query string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
