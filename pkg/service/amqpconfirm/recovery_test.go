package amqpconfirm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/internal/testenv"
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

	admin, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	adm, err := admin.Channel()
	if err != nil {
		t.Fatal(err)
	}
	limitArgs := amqp.Table{"x-max-length": int64(100), "x-overflow": "reject-publish"}
	if _, err := adm.QueueDeclare(queue, false, true, false, false, limitArgs); err != nil {
		t.Fatal(err)
	}
	if err := adm.Qos(20, 0, false); err != nil {
		t.Fatal(err)
	}
	deliveries, err := adm.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var (
		inQueue  sync.Map // message id -> true
		consumed = make(chan struct{})
	)
	go func() {
		defer close(consumed)
		for d := range deliveries {
			inQueue.Store(d.MessageId, true)
			_ = d.Ack(false)
		}
	}()

	run := 6 * time.Second
	if d, err := time.ParseDuration(os.Getenv("ONCEPAY_RECOVERY_TEST_FOR")); err == nil {
		run = d // a longer run, to look for a rare race
	}
	ctx, stop := context.WithTimeout(t.Context(), run)
	defer stop()
	var (
		wg        sync.WaitGroup
		published sync.Map
		counts    struct{ published, failed, timedOut, nacked atomic.Int64 }
		errKinds  sync.Map
	)
	for g := range 16 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				id := fmt.Sprintf("m_%d_%d", g, i)
				pctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := gate.Publish(pctx, "", queue, false, amqp.Publishing{MessageId: id, Body: []byte(`{}`)})
				cancel()
				if err == nil {
					published.Store(id, true)
					counts.published.Add(1)
					continue
				}
				counts.failed.Add(1)
				if errors.Is(err, context.DeadlineExceeded) {
					counts.timedOut.Add(1)
				}
				if errors.Is(err, amqpconfirm.ErrNacked) {
					counts.nacked.Add(1)
				}
				n, _ := errKinds.LoadOrStore(err.Error(), new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
				if !errors.Is(err, amqpconfirm.ErrNacked) {
					time.Sleep(time.Millisecond) // no hot loop while it recovers
				}
			}
		})
	}
	var breaks atomic.Int64
	wg.Go(func() {
		for ctx.Err() == nil {
			ran, err := gate.Do(func(ch *amqp.Channel) error {
				return ch.ExchangeDeclarePassive("no-such-exchange-"+queue, amqp.ExchangeTopic, true, false, false, false, nil)
			})
			if ran && err != nil {
				breaks.Add(1)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	wg.Wait()

	deadline := time.Now().Add(15 * time.Second)
	for { // drain the queue: everything in it is seen
		q, err := adm.QueueDeclarePassive(queue, false, true, false, false, limitArgs)
		if err != nil {
			t.Fatal(err)
		}
		if q.Messages == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages left in %s after 15s", q.Messages, queue)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = adm.Close()
	<-consumed

	var wrong []string
	published.Range(func(k, _ any) bool {
		if _, ok := inQueue.Load(k); !ok {
			wrong = append(wrong, k.(string))
		}
		return true
	})
	t.Logf("%d channel errors forced; %d publishes confirmed, %d failed (%d nacked, %d timed out)",
		breaks.Load(), counts.published.Load(), counts.failed.Load(), counts.nacked.Load(), counts.timedOut.Load())
	errKinds.Range(func(k, n any) bool {
		t.Logf("failed %d times: %s", n.(*atomic.Int64).Load(), strings.TrimSpace(k.(string)))
		return true
	})
	if breaks.Load() < 10 || counts.published.Load() == 0 || counts.nacked.Load() == 0 {
		t.Fatalf("the test did not exercise recovery and nacks: %d channel errors, %d confirmed, %d nacked",
			breaks.Load(), counts.published.Load(), counts.nacked.Load())
	}
	if len(wrong) > 0 {
		t.Errorf("%d messages reported confirmed never reached the queue (nacked or lost), e.g. %v",
			len(wrong), wrong[:min(len(wrong), 5)])
	}
	if n := counts.timedOut.Load(); n > 0 {
		t.Errorf("%d publishes waited 5s for a confirm that never came", n)
	}
}
