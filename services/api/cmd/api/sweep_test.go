package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
)

// TestSweeperRepublishesALostMessage: a payment's message is published and
// confirmed, then lost before any worker settles the payment (here the
// test's consumer takes it and drops it). While the payment stays pending,
// the api's sweeper publishes the message again every OUTBOX_SWEEP_AGE,
// OUTBOX_SWEEP_LIMIT times, then leaves it for an operator.
func TestSweeperRepublishesALostMessage(t *testing.T) {
	t.Parallel()
	a := startAPI(t, apiOptions{env: map[string]string{
		"OUTBOX_SWEEP_INTERVAL": "100ms", "OUTBOX_SWEEP_AGE": "1s", "OUTBOX_SWEEP_LIMIT": "2",
	}})
	deliveries := consume(t, a, bindQueue(t, a))
	key := testenv.Name(t, "k")
	created := a.post(t, a.merchantA, key, paymentBody)
	if created.Status != http.StatusAccepted {
		t.Fatalf("create: %d %s", created.Status, created.Body)
	}
	id := paymentID(t, created.Body)

	first := receive(t, deliveries, 5*time.Second) // the inline publish, then "lost"
	checkMessage(t, a, first, a.merchantA, key, id)
	start := time.Now()
	for i := range 2 {
		d := receive(t, deliveries, 5*time.Second)
		checkMessage(t, a, d, a.merchantA, key, id)
		if took := time.Since(start); took < 900*time.Millisecond {
			t.Errorf("republish %d came %s after the previous publish, want no sooner than OUTBOX_SWEEP_AGE (1s)", i+1, took)
		}
		start = time.Now()
	}
	select {
	case d := <-deliveries:
		t.Errorf("a publish past OUTBOX_SWEEP_LIMIT: %s", d.Body)
	case <-time.After(2 * time.Second):
	}
	if got := a.metric(t, `outbox_published_total{path="sweep"}`); got != 2 {
		t.Errorf(`outbox_published_total{path="sweep"} = %v, want 2`, got)
	}

	// A settled payment is never swept, even with its limit to spare.
	other := a.post(t, a.merchantA, testenv.Name(t, "k"), paymentBody)
	receive(t, deliveries, 5*time.Second)
	if _, err := a.pool.Exec(context.Background(), `UPDATE payments SET status = 'succeeded' WHERE id = $1`, paymentID(t, other.Body)); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-deliveries:
		t.Errorf("a settled payment's message was published again: %s", d.Body)
	case <-time.After(2 * time.Second):
	}
}
