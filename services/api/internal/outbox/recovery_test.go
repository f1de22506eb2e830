package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/pkg/message/messagetest"
	amqp "github.com/rabbitmq/amqp091-go"
)

// TestConfirmsExactAcrossChannelRecovery: publishers publish concurrently
// to an exchange whose queue rejects when full (x-max-length,
// x-overflow reject-publish: the broker nacks what it does not take), a
// slow consumer keeps the queue near full so that acks and nacks
// interleave, and the publishing channel is closed by a channel error
// (a passive declare of a missing exchange) again and again. Whatever
// Publish reports as published must be in the queue: a publish that went
// out without its confirm, or a confirm that settled another message,
// would report a nacked message as published.
func TestConfirmsExactAcrossChannelRecovery(t *testing.T) {
	url := testenv.AMQPURL(t)
	name := testenv.Name(t, "recovery")
	topo := message.Topology{Exchange: name, Queue: name + ".charge", DeliveryLimit: message.DefaultDeliveryLimit}
	limited := name + ".limited"
	t.Cleanup(func() { messagetest.DeleteTopology(url, topo, limited) })

	p := NewPublisher(PublisherConfig{URL: url, Topology: topo, ConnectionName: name, RetryInterval: 20 * time.Millisecond},
		slog.New(slog.DiscardHandler))
	p.Start()
	t.Cleanup(func() { _ = p.Close() })
	waitReady(t, p)

	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	admin, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	// Only the limited queue decides: the charge queue goes, so a
	// message is confirmed exactly when the limited queue took it.
	if _, err := admin.QueueDelete(topo.Queue, false, false, false); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.QueueDeclare(limited, false, false, false, false,
		amqp.Table{"x-max-length": int64(100), "x-overflow": "reject-publish"}); err != nil {
		t.Fatal(err)
	}
	if err := admin.QueueBind(limited, message.RoutingKey, topo.Exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := admin.Qos(20, 0, false); err != nil {
		t.Fatal(err)
	}
	deliveries, err := admin.Consume(limited, "", false, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var (
		inQueue   sync.Map // message id -> true
		consumed  = make(chan struct{})
		published sync.Map
		counts    struct{ published, failed atomic.Int64 }
		errKinds  sync.Map
	)
	go func() {
		defer close(consumed)
		for d := range deliveries {
			inQueue.Store(d.MessageId, true)
			// one consumer, slower than 16 publishers: the queue stays near full
			_ = d.Ack(false)
		}
	}()

	run := 6 * time.Second
	if d, err := time.ParseDuration(os.Getenv("ONCEPAY_RECOVERY_TEST_FOR")); err == nil {
		run = d // a longer run, to look for a rare race
	}
	ctx, stop := context.WithTimeout(t.Context(), run)
	defer stop()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				id := fmt.Sprintf("pay_%d_%d", g, i)
				pctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				err := p.Publish(pctx, Message{PaymentID: id, RoutingKey: message.RoutingKey, Payload: []byte(`{}`)})
				cancel()
				if err == nil {
					published.Store(id, true)
					counts.published.Add(1)
				} else {
					counts.failed.Add(1)
					n, _ := errKinds.LoadOrStore(errKind(err, id), new(atomic.Int64))
					n.(*atomic.Int64).Add(1)
					if errors.Is(err, ErrNotConnected) {
						time.Sleep(time.Millisecond) // no hot loop while it recovers
					}
				}
			}
		})
	}
	breaks := 0
	wg.Go(func() {
		for ctx.Err() == nil {
			if breakChannel(p, "no-such-exchange-"+name) {
				breaks++
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	wg.Wait()

	// Drain the queue: everything that is in it is seen.
	waitFor(t, "the queue to drain", func() bool {
		q, err := admin.QueueDeclarePassive(limited, false, false, false, false,
			amqp.Table{"x-max-length": int64(100), "x-overflow": "reject-publish"})
		return err == nil && q.Messages == 0
	})
	_ = admin.Close()
	<-consumed

	var wrong []string
	published.Range(func(k, _ any) bool {
		if _, ok := inQueue.Load(k); !ok {
			wrong = append(wrong, k.(string))
		}
		return true
	})
	t.Logf("%d channel errors forced; %d publishes reported published, %d failed",
		breaks, counts.published.Load(), counts.failed.Load())
	errKinds.Range(func(k, n any) bool { t.Logf("failed %d times: %s", n.(*atomic.Int64).Load(), k); return true })
	if breaks < 10 || counts.published.Load() == 0 || counts.failed.Load() == 0 {
		t.Fatalf("the test did not exercise recovery and nacks: %d channel errors, %d published, %d failed",
			breaks, counts.published.Load(), counts.failed.Load())
	}
	if len(wrong) > 0 {
		t.Errorf("%d messages reported published never reached the queue (nacked or lost), e.g. %v",
			len(wrong), wrong[:min(len(wrong), 5)])
	}
}

// errKind is err without the message id, to count failures by kind.
func errKind(err error, id string) string {
	return strings.ReplaceAll(err.Error(), id, "<id>")
}

// waitReady waits until p reports its connection and channel open.
func waitReady(t *testing.T, p *Publisher) {
	t.Helper()
	waitFor(t, "the publisher to connect", func() bool { return p.Check(t.Context()) == nil })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// breakChannel makes the broker close p's publishing channel with a
// channel error (404 on a passive declare of a missing exchange), when it
// is open (a call during the library's reopen would break the reopen
// instead); it reports whether it did.
func breakChannel(p *Publisher, missing string) bool {
	p.mu.Lock()
	gate := p.gate
	p.mu.Unlock()
	if gate == nil {
		return false
	}
	ran, err := gate.Do(func(ch *amqp.Channel) error {
		return ch.ExchangeDeclarePassive(missing, amqp.ExchangeTopic, true, false, false, false, nil)
	})
	return ran && err != nil
}
