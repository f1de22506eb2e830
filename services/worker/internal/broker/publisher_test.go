package broker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestConfirmsExactAcrossChannelRecovery: several consumers on one
// connection each publish, one publish at a time as the consumer loop does,
// to a queue that rejects when full (x-max-length, x-overflow
// reject-publish: the broker nacks what it does not take), drained by a
// slower consumer so that acks and nacks interleave; meanwhile their
// channels are closed by channel errors (a passive declare of a missing
// exchange) again and again, and amqp091-go recovers them.
//
// Whatever Publish reports as confirmed must be in the queue (safety), and
// no publish may wait out its whole timeout for a confirm that never comes
// (liveness): the broker answers every publish of a channel in confirm
// mode, so a publish waits only for its own confirm or for the end of its
// channel session. A publish sent while the library reopens a channel,
// before confirm mode is back, gets no confirm and shifts every later
// confirm of the channel by one; each later publish then waits for a
// confirm that only the next one brings.
func TestConfirmsExactAcrossChannelRecovery(t *testing.T) {
	url, topo, conn := dialTest(t)
	admin := adminConn(t, url, topo)
	limited := topo.Queue + ".limited"
	adm, err := admin.Channel()
	if err != nil {
		t.Fatal(err)
	}
	limitArgs := amqp.Table{"x-max-length": int64(100), "x-overflow": "reject-publish"}
	if _, err := adm.QueueDeclare(limited, false, true, false, false, limitArgs); err != nil {
		t.Fatal(err)
	}
	if err := adm.Qos(20, 0, false); err != nil {
		t.Fatal(err)
	}
	deliveries, err := adm.Consume(limited, "", false, false, false, false, nil)
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

	const publishers = 4
	var conss []*Consumer
	for i := range publishers {
		cons, err := conn.Consume(topo, 4, fmt.Sprintf("broker-test-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		conss = append(conss, cons)
	}

	run := 6 * time.Second
	if d, err := time.ParseDuration(os.Getenv("ONCEPAY_RECOVERY_TEST_FOR")); err == nil {
		run = d // a longer run, to look for a rare race
	}
	ctx, stop := context.WithTimeout(t.Context(), run)
	defer stop()
	var (
		wg        sync.WaitGroup
		published sync.Map
		counts    struct{ published, failed, timedOut atomic.Int64 }
		errKinds  sync.Map
	)
	for g, cons := range conss {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				id := fmt.Sprintf("m_%d_%d", g, i)
				// A confirm that never comes (no ack, no nack, no channel
				// close) waits for ever; 30 s tells that from a broker that is
				// only slow on a loaded machine.
				pctx, cancel := context.WithTimeout(context.Background(), confirmWait)
				err := cons.Publisher.Publish(pctx, limited, amqp.Publishing{MessageId: id, Body: []byte(`{}`)})
				cancel()
				switch {
				case err == nil:
					published.Store(id, true)
					counts.published.Add(1)
				case errors.Is(err, context.DeadlineExceeded):
					counts.timedOut.Add(1)
					fallthrough
				default:
					counts.failed.Add(1)
					n, _ := errKinds.LoadOrStore(strings.ReplaceAll(err.Error(), id, "<id>"), new(atomic.Int64))
					n.(*atomic.Int64).Add(1)
					time.Sleep(time.Millisecond) // no hot loop while it recovers
				}
			}
		})
	}
	var breaks atomic.Int64
	wg.Go(func() {
		for ctx.Err() == nil {
			if breakChannel(conss[rand.IntN(len(conss))], "no-such-exchange-"+topo.Exchange) {
				breaks.Add(1)
			}
			time.Sleep(25 * time.Millisecond)
		}
	})
	wg.Wait()

	deadline := time.Now().Add(15 * time.Second)
	for { // drain the queue: everything in it is seen
		q, err := adm.QueueDeclarePassive(limited, false, true, false, false, limitArgs)
		if err != nil {
			t.Fatal(err)
		}
		if q.Messages == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages left in %s after 15s", q.Messages, limited)
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
	t.Logf("%d channel errors forced; %d publishes confirmed, %d failed (%d timed out)",
		breaks.Load(), counts.published.Load(), counts.failed.Load(), counts.timedOut.Load())
	errKinds.Range(func(k, n any) bool { t.Logf("failed %d times: %s", n.(*atomic.Int64).Load(), k); return true })
	if breaks.Load() < 10 || counts.published.Load() == 0 || counts.failed.Load() == 0 {
		t.Fatalf("the test did not exercise recovery and nacks: %d channel errors, %d confirmed, %d failed",
			breaks.Load(), counts.published.Load(), counts.failed.Load())
	}
	if len(wrong) > 0 {
		t.Errorf("%d messages reported confirmed never reached the queue (nacked or lost), e.g. %v",
			len(wrong), wrong[:min(len(wrong), 5)])
	}
	if n := counts.timedOut.Load(); n > 0 {
		t.Errorf("%d publishes waited %s for a confirm that never came", n, confirmWait)
	}
}

// confirmWait is how long a publish of TestConfirmsExactAcrossChannelRecovery
// waits for its confirm before the test calls it lost.
const confirmWait = 30 * time.Second

// breakChannel makes the broker close cons's channel with a channel error
// (404 on a passive declare of a missing exchange), when it is open in
// confirm mode (a call during the library's reopen would break the reopen
// instead); it reports whether it did.
func breakChannel(cons *Consumer, missing string) bool {
	ran, err := cons.Publisher.gate.Do(func(ch *amqp.Channel) error {
		return ch.ExchangeDeclarePassive(missing, amqp.ExchangeTopic, true, false, false, false, nil)
	})
	return ran && err != nil
}
