package main

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
)

// TestRelayPublishesWhatADeadReplicaCommitted: a replica commits a payment
// and its outbox row, then never publishes (its broker connection is down,
// and then it is gone). Another replica's relay, on the same database,
// publishes the row: the payment is not lost between the commit and the
// publish, and it is published once.
func TestRelayPublishesWhatADeadReplicaCommitted(t *testing.T) {
	t.Parallel()
	dead := startAPI(t, apiOptions{env: map[string]string{"AMQP_URL": "amqp://oncepay:oncepay@" + closedAddr(t) + "/"}})
	key := testenv.Name(t, "k")
	r := dead.post(t, dead.merchantA, key, paymentBody)
	if r.Status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	id := paymentID(t, r.Body)
	waitFor(t, 3*time.Second, "the failed inline publish recorded", func() bool {
		return dead.count(t, `SELECT count(*) FROM outbox WHERE payment_id = $1 AND published_at IS NULL AND attempts >= 1`, id) == 1
	})
	dead.stop()
	<-dead.exited

	live := startAPI(t, apiOptions{env: map[string]string{"DATABASE_URL": dead.pool.Config().ConnString()}})
	deliveries := consume(t, live, bindQueue(t, live))
	checkMessage(t, live, receive(t, deliveries, 10*time.Second), dead.merchantA, key, id)
	waitFor(t, 3*time.Second, "outbox row marked published", func() bool {
		return dead.count(t, `SELECT count(*) FROM outbox WHERE payment_id = $1 AND published_at IS NOT NULL`, id) == 1
	})
	select {
	case d := <-deliveries:
		t.Errorf("a second message %s for one committed row", d.Body)
	case <-time.After(1500 * time.Millisecond): // > OUTBOX_RELAY_AGE + interval
	}
}

// TestRedisRestart: Redis restarts (the harness's Redis keeps its data in
// an append-only file, as a production Redis should). The api's connections
// recover, and a retry after the restart is replayed from the boundary
// itself, byte for byte, without the database backstop. It restarts the
// shared Redis, so it does not run in parallel.
func TestRedisRestart(t *testing.T) {
	a := startAPI(t, apiOptions{})
	key := testenv.Name(t, "k")
	first := a.post(t, a.merchantA, key, paymentBody)
	if first.Status != http.StatusAccepted {
		t.Fatalf("before the restart: %d %s", first.Status, first.Body)
	}
	testenv.Harness(t, "restart", "redis")
	waitStatus(t, a.ops+"/readyz", http.StatusOK, 15*time.Second)

	var again response
	waitFor(t, 10*time.Second, "a 2xx after the restart", func() bool {
		again = a.post(t, a.merchantA, key, paymentBody)
		return again.Status == http.StatusAccepted
	})
	if !bytes.Equal(again.Body, first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry after the restart: %d %s, want the first answer replayed", again.Status, again.Body)
	}
	if got := a.metric(t, `payments_backstop_total{result="replayed"}`); got > 0 {
		t.Errorf("the database backstop answered (%v): the boundary lost its data in the restart", got)
	}
	if got := a.count(t, `SELECT count(*) FROM payments WHERE merchant_id = $1 AND idempotency_key = $2`, a.merchantA, key); got != 1 {
		t.Errorf("%d payment rows, want 1", got)
	}
}
