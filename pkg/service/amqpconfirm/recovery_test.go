package amqpconfirm_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/internal/testenv/confirmtest"
	"github.com/oncepay/oncepay/pkg/service/amqpconfirm"
)

// TestConfirmsExactAcrossChannelRecovery: 16 publishers publish
// concurrently through one gate to a queue that rejects when full
// (x-max-length, x-overflow reject-publish: the broker nacks what it does
// not take), drained by a slower consumer so that acks and nacks
// interleave, while the channel is closed by a channel error (a passive
// declare of a missing exchange) again and again and amqp091-go recovers
// it. Whatever Publish reports as confirmed must be in the queue, and no
// publish may wait out its timeout for a confirm that never comes: a
// publish sent during the reopen, before confirm mode is back, would shift
// every later confirm of the channel by one.
func TestConfirmsExactAcrossChannelRecovery(t *testing.T) {
	testenv.Integration(t)
	url := testenv.AMQPURL(t)
	queue := testenv.Name(t, "confirm")

	recovery := amqpconfirm.NewRecovery(nil)
	conn, err := amqp.DialConfig(url, amqp.Config{Recovery: &amqp.Recovery{
		ReconnectionConfig: &amqp.ReconnectionConfig{MaxRetryCount: 100, RetryInterval: 20 * time.Millisecond},
		ConnectionRecovery: recovery,
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	gate := recovery.Gate(ch)
	t.Cleanup(gate.Close)

	var nacked atomic.Int64
	res := confirmtest.Run(t, confirmtest.Config{
		URL: url, Queue: queue, Publishers: 16, Timeout: 5 * time.Second,
		Publish: func(ctx context.Context, _ int, id string) error {
			err := gate.Publish(ctx, "", queue, false, amqp.Publishing{MessageId: id, Body: []byte(`{}`)})
			if errors.Is(err, amqpconfirm.ErrNacked) {
				nacked.Add(1)
			}
			return err
		},
		Break: func() bool {
			ran, err := gate.Do(func(ch *amqp.Channel) error {
				return ch.ExchangeDeclarePassive("no-such-exchange-"+queue, amqp.ExchangeTopic, true, false, false, false, nil)
			})
			return ran && err != nil
		},
		BreakEvery: 50 * time.Millisecond,
	})
	if nacked.Load() == 0 {
		t.Errorf("no publish was nacked (%d failed): the test did not exercise nacks", res.Failed)
	}
	if res.TimedOut > 0 {
		t.Errorf("%d publishes waited 5s for a confirm that never came", res.TimedOut)
	}
}
