package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
	amqp "github.com/rabbitmq/amqp091-go"
)

// bindQueue declares a durable queue bound to the api's exchange for
// payment.initiated and returns its name; it is deleted at cleanup.
func bindQueue(t *testing.T, a *api) string {
	t.Helper()
	name := testenv.Name(t, "q")
	conn, err := amqp.Dial(a.amqpURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(name, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(name, "payment.initiated", a.exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := amqp.Dial(a.amqpURL)
		if err != nil {
			return
		}
		defer conn.Close()
		if ch, err := conn.Channel(); err == nil {
			ch.QueueDelete(name, false, false, false)
		}
	})
	return name
}

// consume returns the queue's deliveries (auto-ack) on a connection closed
// at cleanup, dialling until RabbitMQ answers or 30s pass.
func consume(t *testing.T, a *api, queue string) <-chan amqp.Delivery {
	t.Helper()
	var conn *amqp.Connection
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if conn, err = amqp.Dial(a.amqpURL); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("rabbitmq did not come back: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	deliveries, err := ch.Consume(queue, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return deliveries
}

func receive(t *testing.T, deliveries <-chan amqp.Delivery, within time.Duration) amqp.Delivery {
	t.Helper()
	select {
	case d := <-deliveries:
		return d
	case <-time.After(within):
		t.Fatalf("no message within %s", within)
	}
	return amqp.Delivery{}
}

// checkMessage verifies the message format of ARCHITECTURE §4 / docs/api.md.
func checkMessage(t *testing.T, a *api, d amqp.Delivery, merchant, key, paymentID string) {
	t.Helper()
	want, _ := json.Marshal(map[string]any{"payment_id": paymentID, "merchant_id": merchant, "idempotency_key": key,
		"amount": 1250, "currency": "EUR", "customer_id": "cus_42"})
	var got, wantMap map[string]any
	json.Unmarshal(want, &wantMap)
	if err := json.Unmarshal(d.Body, &got); err != nil || len(got) != len(wantMap) {
		t.Errorf("body = %s, want %s", d.Body, want)
	}
	for k, v := range wantMap {
		if got[k] != v {
			t.Errorf("body %s: %s = %v, want %v", d.Body, k, got[k], v)
		}
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"exchange", d.Exchange, a.exchange},
		{"routing key", d.RoutingKey, "payment.initiated"},
		{"content type", d.ContentType, "application/json"},
		{"delivery mode", d.DeliveryMode, amqp.Persistent},
		{"message id", d.MessageId, paymentID},
		{"x-idempotency-key", d.Headers["x-idempotency-key"], key},
		{"x-merchant-id", d.Headers["x-merchant-id"], merchant},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if d.Timestamp.IsZero() || time.Since(d.Timestamp) > 5*time.Minute {
		t.Errorf("timestamp = %v, want about now", d.Timestamp)
	}
}

// waitFor polls cond every 50ms until it holds or within passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within %s", what, within)
}

// TestPublishAfterCommit: the message goes out right after the commit, is
// confirmed and its outbox row marked; the relay does not send it again.
func TestPublishAfterCommit(t *testing.T) {
	t.Parallel()
	a := startAPI(t, apiOptions{})
	deliveries := consume(t, a, bindQueue(t, a))
	key := testenv.Name(t, "k")
	r := a.post(t, a.merchantA, key, paymentBody)
	if r.Status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	id := paymentID(t, r.Body)
	checkMessage(t, a, receive(t, deliveries, 5*time.Second), a.merchantA, key, id)
	waitFor(t, 2*time.Second, "outbox row published", func() bool {
		return a.count(t, `SELECT count(*) FROM outbox WHERE payment_id = $1 AND published_at IS NOT NULL`, id) == 1
	})
	select {
	case d := <-deliveries:
		t.Errorf("a second message %s after a confirmed inline publish", d.Body)
	case <-time.After(1500 * time.Millisecond): // > OUTBOX_RELAY_AGE + interval
	}
	if got := a.metric(t, `outbox_published_total{path="inline"}`); got != 1 {
		t.Errorf(`outbox_published_total{path="inline"} = %v, want 1`, got)
	}
}

// TestRelayAfterRabbitMQOutage: with RabbitMQ stopped the request still
// gets its 202 once the row is committed; when RabbitMQ is back, the
// client library's recovery reconnects and the relay publishes the message.
// It stops the shared RabbitMQ, so it does not run in parallel.
func TestRelayAfterRabbitMQOutage(t *testing.T) {
	a := startAPI(t, apiOptions{})
	queue := bindQueue(t, a)
	testenv.Harness(t, "stop", "rabbitmq")
	started := false
	t.Cleanup(func() {
		if !started {
			testenv.Harness(t, "start", "rabbitmq")
		}
	})

	key := testenv.Name(t, "k")
	begin := time.Now()
	r := a.post(t, a.merchantA, key, paymentBody)
	if r.Status != http.StatusAccepted {
		t.Fatalf("POST with RabbitMQ down: %d %s, want 202", r.Status, r.Body)
	}
	if took := time.Since(begin); took > 2*time.Second {
		t.Errorf("POST with RabbitMQ down took %s", took)
	}
	id := paymentID(t, r.Body)
	waitFor(t, 3*time.Second, "failed publish recorded", func() bool {
		return a.count(t, `SELECT count(*) FROM outbox WHERE payment_id = $1 AND published_at IS NULL
			AND attempts >= 1 AND last_error <> ''`, id) == 1
	})
	ready := a.opsGet(t, "/readyz")
	var rep struct {
		Checks map[string]struct{ Status string }
	}
	json.Unmarshal(ready.Body, &rep)
	if ready.Status != http.StatusOK || rep.Checks["rabbitmq"].Status != "down" {
		t.Errorf("readyz with RabbitMQ down = %d %s, want 200 with rabbitmq down (not required)", ready.Status, ready.Body)
	}

	testenv.Harness(t, "start", "rabbitmq")
	started = true
	deliveries := consume(t, a, queue)
	checkMessage(t, a, receive(t, deliveries, 30*time.Second), a.merchantA, key, id)
	waitFor(t, 5*time.Second, "outbox fully published", func() bool {
		return a.count(t, `SELECT count(*) FROM outbox WHERE published_at IS NULL`) == 0
	})
	if got := a.metric(t, `outbox_published_total{path="relay"}`); got < 1 {
		t.Errorf(`outbox_published_total{path="relay"} = %v, want >= 1`, got)
	}
	waitStatus(t, a.ops+"/readyz", http.StatusOK, time.Second)
}
