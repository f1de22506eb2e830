// Package confirmtest checks a RabbitMQ publisher with confirms while its
// channel is closed and recovered again and again: whatever it reports as
// confirmed must be in the queue. It is the scenario that the amqpconfirm
// gate, the api's outbox publisher and the worker's publisher each pass.
// It is test rig: product code must not import it.
package confirmtest

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
)

// RunEnv names an environment variable that, set to a duration, makes a
// run last that long instead of 6 s, to look for a rare race.
const RunEnv = "ONCEPAY_RECOVERY_TEST_FOR"

// Config is a run of the scenario.
type Config struct {
	// URL is the broker's (testenv.AMQPURL).
	URL string
	// Queue is the queue the publishes must reach. Run declares it
	// (auto-delete) so that it holds at most 100 messages and the broker
	// nacks more (x-max-length, x-overflow reject-publish), and drains it
	// with one consumer slower than the publishers, so that acks and
	// nacks interleave.
	Queue string
	// Exchange and RoutingKey, if Exchange is set, bind Queue to the
	// exchange the publisher publishes to.
	Exchange, RoutingKey string
	// Publishers is how many goroutines publish at once, each one
	// message at a time.
	Publishers int
	// Publish publishes one message whose message id is id, to reach
	// Queue, and returns what the publisher reports: nil only when the
	// broker confirmed it. publisher is the goroutine's number.
	Publish func(ctx context.Context, publisher int, id string) error
	// Timeout bounds each Publish.
	Timeout time.Duration
	// Break closes a publishing channel with a channel error (a passive
	// declare of a missing exchange) when one is open, and reports
	// whether it did. Run calls it every BreakEvery.
	Break      func() bool
	BreakEvery time.Duration
}

// Result counts what a run did.
type Result struct {
	Breaks    int64 // Break calls that closed a channel
	Published int64 // publishes reported confirmed
	Failed    int64 // publishes that returned an error
	TimedOut  int64 // of those, publishes that waited out Timeout
}

// Run publishes from cfg.Publishers goroutines while cfg.Break closes
// channels, then drains the queue. It fails t when a publish reported
// confirmed is not in the queue, and when the run did not exercise
// recovery and nacks (fewer than 10 channels closed, nothing confirmed,
// or nothing failed). What else must hold (no publish timed out, the
// failures were nacks) the caller checks on the Result.
func Run(t *testing.T, cfg Config) Result {
	t.Helper()
	inQueue, consumed, drain := consume(t, cfg)

	run := 6 * time.Second
	if d, err := time.ParseDuration(os.Getenv(RunEnv)); err == nil {
		run = d
	}
	ctx, stop := context.WithTimeout(t.Context(), run)
	defer stop()
	var (
		wg        sync.WaitGroup
		published sync.Map
		counts    struct{ breaks, published, failed, timedOut atomic.Int64 }
		errKinds  sync.Map
	)
	for g := range cfg.Publishers {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				id := fmt.Sprintf("m_%d_%d", g, i)
				pctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
				err := cfg.Publish(pctx, g, id)
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
				n, _ := errKinds.LoadOrStore(strings.ReplaceAll(strings.TrimSpace(err.Error()), id, "<id>"), new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
				time.Sleep(time.Millisecond) // no hot loop while it recovers
			}
		})
	}
	wg.Go(func() {
		for ctx.Err() == nil {
			if cfg.Break() {
				counts.breaks.Add(1)
			}
			time.Sleep(cfg.BreakEvery)
		}
	})
	wg.Wait()
	drain()
	<-consumed

	res := Result{Breaks: counts.breaks.Load(), Published: counts.published.Load(),
		Failed: counts.failed.Load(), TimedOut: counts.timedOut.Load()}
	t.Logf("%d channel errors forced; %d publishes confirmed, %d failed (%d timed out)",
		res.Breaks, res.Published, res.Failed, res.TimedOut)
	errKinds.Range(func(k, n any) bool { t.Logf("failed %d times: %s", n.(*atomic.Int64).Load(), k); return true })
	if res.Breaks < 10 || res.Published == 0 || res.Failed == 0 {
		t.Fatalf("the test did not exercise recovery and nacks: %d channel errors, %d confirmed, %d failed",
			res.Breaks, res.Published, res.Failed)
	}
	var wrong []string
	published.Range(func(k, _ any) bool {
		if _, ok := inQueue.Load(k); !ok {
			wrong = append(wrong, k.(string))
		}
		return true
	})
	if len(wrong) > 0 {
		t.Errorf("%d messages reported confirmed never reached the queue (nacked or lost), e.g. %v",
			len(wrong), wrong[:min(len(wrong), 5)])
	}
	return res
}

// consume declares cfg.Queue with its limit on a connection of its own
// and consumes it, recording each message id in inQueue. drain waits
// until the queue is empty and closes the channel; consumed is closed
// when the last delivery is recorded.
func consume(t *testing.T, cfg Config) (inQueue *sync.Map, consumed <-chan struct{}, drain func()) {
	t.Helper()
	conn, err := amqp.Dial(cfg.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	limit := amqp.Table{"x-max-length": int64(100), "x-overflow": "reject-publish"}
	if _, err := ch.QueueDeclare(cfg.Queue, false, true, false, false, limit); err != nil {
		t.Fatal(err)
	}
	if cfg.Exchange != "" {
		if err := ch.QueueBind(cfg.Queue, cfg.RoutingKey, cfg.Exchange, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := ch.Qos(20, 0, false); err != nil {
		t.Fatal(err)
	}
	deliveries, err := ch.Consume(cfg.Queue, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	inQueue = new(sync.Map) // message id -> true
	done := make(chan struct{})
	go func() {
		defer close(done)
		for d := range deliveries {
			inQueue.Store(d.MessageId, true)
			_ = d.Ack(false)
		}
	}()
	drain = func() {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for { // everything in the queue is seen
			q, err := ch.QueueDeclarePassive(cfg.Queue, false, true, false, false, limit)
			if err != nil {
				t.Fatal(err)
			}
			if q.Messages == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d messages left in %s after 15s", q.Messages, cfg.Queue)
			}
			time.Sleep(20 * time.Millisecond)
		}
		_ = ch.Close()
	}
	return inQueue, done, drain
}
