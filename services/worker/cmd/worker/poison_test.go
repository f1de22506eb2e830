package main

import (
	"slices"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/services/worker/internal/consumer"
	"github.com/oncepay/oncepay/services/worker/internal/metrics"
)

// Poison messages go to the dead-letter queue once, with a reason, instead
// of looping; a valid message behind them is still charged.
func TestPoisonMessagesAreDeadLettered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	w := e.startWorker("poison", nil)

	disagrees := e.newPayment(700, "cus_poison")
	badHeader := e.message(disagrees)
	badHeader.Headers = amqp.Table{"x-idempotency-key": "another-key", "x-merchant-id": e.merchant}
	unknown := e.message(payment{ID: "pay_unknown_" + randHex(4), Key: "key-" + randHex(4), Customer: "cus_x", Amount: 5})
	poison := []amqp.Publishing{
		{MessageId: "poison-json", DeliveryMode: amqp.Persistent, Body: []byte("{not json"), Headers: amqp.Table{"x-merchant-id": e.merchant}},
		{MessageId: "poison-empty", DeliveryMode: amqp.Persistent, Body: []byte("{}")},
		badHeader, // header/body disagreement
		unknown,   // well formed, but no such payment
	}
	for _, m := range poison {
		e.publish(m, 1)
	}
	good := e.newPayment(800, "cus_good")
	e.publish(e.message(good), 1)

	e.waitTerminal(15*time.Second, good.ID)
	eventually(t, 10*time.Second, func() string {
		if e.queueDepth(e.topo.DeadLetterQueue()) != len(poison) {
			return "not every poison message is in the DLQ"
		}
		return ""
	})
	time.Sleep(500 * time.Millisecond) // a loop would show up as more dead-letterings or retries
	if got := w.metric(t, outcome(metrics.DeadLettered)); got != float64(len(poison)) {
		t.Errorf("dead_lettered = %v, want %d", got, len(poison))
	}
	for _, o := range []string{metrics.TransientRetry, metrics.InProgressRetry} {
		if got := w.metric(t, outcome(o)); got != 0 {
			t.Errorf("%s = %v, want 0", o, got)
		}
	}
	dlq := e.drain(e.topo.DeadLetterQueue())
	var ids []string
	for _, d := range dlq {
		ids = append(ids, d.MessageId)
		if r, _ := d.Headers[consumer.HeaderDeadLetterReason].(string); r == "" {
			t.Errorf("%s dead-lettered without a reason", d.MessageId)
		}
	}
	want := []string{"poison-json", "poison-empty", disagrees.ID, unknown.MessageId}
	slices.Sort(ids)
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("DLQ holds %v, want %v", ids, want)
	}
	if r := e.row(disagrees.ID); r.Status != "pending" || len(e.ledger(disagrees.ID).Calls) != 0 {
		t.Errorf("the disagreeing message was acted on: %+v", r)
	}
	if r := e.row(good.ID); r.Status != "succeeded" {
		t.Errorf("good payment = %+v", r)
	}
	if d := e.queueDepth(e.topo.Queue); d != 0 {
		t.Errorf("%d messages left in the main queue", d)
	}
}
