package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/services/worker/internal/metrics"
)

// ErrDeliveriesClosed is returned by Run when the delivery channel closed
// although nobody asked the loop to stop: the broker cancelled the consumer
// or the connection is beyond recovery.
var ErrDeliveriesClosed = errors.New("consumer: delivery channel closed")

// Config tunes a Loop.
type Config struct {
	Concurrency    int           // handler goroutines
	Retries        []RetryQueue  // by increasing delay; at least one; the last is reused without limit
	DeadLetter     string        // the dead-letter queue, for rejected messages only
	Grace          time.Duration // how long in-flight handlers may run on after Run's ctx ends
	PublishTimeout time.Duration // bound on one publish-and-confirm
	// AckDelay is how long an ack may wait to be sent with others in one
	// multiple ack (see acks); 0 sends every ack at once, on its own.
	AckDelay time.Duration
	// AckBatch sends the waiting acks as soon as this many wait (at least
	// 1). Acks not yet sent count against the channel's prefetch, so it
	// should stay below the prefetch minus Concurrency.
	AckBatch int
}

// RetryQueue is a queue that holds a message for Delay, then routes it back.
type RetryQueue struct {
	Queue string
	Delay time.Duration
}

// Channel is where settlements go (*broker.Consumer implements it).
type Channel interface {
	// Ack acknowledges tag, and with multiple every outstanding tag below
	// it too.
	Ack(tag uint64, multiple bool) error
	Nack(tag uint64, requeue bool) error
	Cancel() error
}

// Publisher publishes a message to a queue and returns once the broker
// confirmed it.
type Publisher interface {
	Publish(ctx context.Context, queue string, msg amqp.Publishing) error
}

// Guard runs a settlement only while the channel is in the given epoch
// (*broker.Guard implements it).
type Guard interface {
	Epoch() uint64
	Do(epoch uint64, f func() error) (ran bool, err error)
}

// Deps are what a Loop works with.
type Deps struct {
	Handler   Handler
	Channel   Channel
	Publisher Publisher
	Guard     Guard
	Log       *slog.Logger
	Metrics   *metrics.Metrics
}

// Loop consumes one delivery channel. Create it with New; Run it once.
type Loop struct {
	cfg Config
	Deps
	sess session
	acks acks
}

// New returns a Loop.
func New(cfg Config, d Deps) *Loop { return &Loop{cfg: cfg, Deps: d} }

// result is what a handler goroutine hands back.
type result struct {
	t       tracked
	msg     Message
	outcome string
	err     error
	aborted bool // the handler's context had ended when it returned
}

// Run reads deliveries, runs at most Concurrency handlers at a time and
// settles each delivery exactly once, in this goroutine only.
//
// When ctx ends, Run cancels the consumer, starts nothing new, and gives
// running handlers Config.Grace to finish (their results are settled); then
// it cancels their context and waits for them. Deliveries not finished are
// left unacked: the broker redelivers them once the caller closes the
// channel. Run returns nil after such a shutdown, and ErrDeliveriesClosed
// (after the same draining) if the delivery channel closed on its own.
func (l *Loop) Run(ctx context.Context, deliveries <-chan amqp.Delivery) error {
	work, abort := context.WithCancel(context.WithoutCancel(ctx))
	defer abort()
	l.sess = session{epoch: l.Guard.Epoch()}

	var (
		results  = make(chan result, l.cfg.Concurrency)
		pending  []tracked // read, not started
		busy     int       // handlers running
		draining bool
		stop     = ctx.Done()
		grace    <-chan time.Time
		runErr   error
		in       = deliveries
		flushT   = time.NewTimer(time.Hour)
		flushC   <-chan time.Time // set while the flush timer runs
	)
	flushT.Stop()
	defer flushT.Stop()
	// flush sends the waiting acks; all also sends those above an open tag.
	flush := func(all bool) {
		if flushC != nil {
			flushT.Stop()
			flushC = nil
		}
		l.sendAcks(l.acks.flush(all))
		if l.acks.pending() > 0 {
			flushT.Reset(l.cfg.AckDelay)
			flushC = flushT.C
		}
	}
	// settled flushes the acks once AckBatch wait, and starts the timer
	// for the first one waiting.
	settled := func() {
		switch n := l.acks.pending(); {
		case n >= max(1, l.cfg.AckBatch):
			flush(false)
		case n > 0 && flushC == nil:
			flushT.Reset(l.cfg.AckDelay)
			flushC = flushT.C
		}
	}
	startDraining := func(why string) {
		draining, stop = true, nil
		l.Log.Info("consumer draining", "why", why, "in_flight", busy, "not_started", len(pending), "grace", l.cfg.Grace.String())
		for _, t := range pending {
			l.skip(t.d, metrics.SkipShutdown)
		}
		pending = nil
		grace = time.After(l.cfg.Grace)
	}
	for {
		for !draining && busy < l.cfg.Concurrency && len(pending) > 0 {
			busy++
			go l.handle(work, pending[0], results)
			pending = pending[1:]
		}
		if draining && busy == 0 {
			flush(true)
			return runErr
		}
		select {
		case d, ok := <-in:
			switch {
			case !ok:
				in = nil
				if !draining {
					runErr = ErrDeliveriesClosed
					startDraining("delivery channel closed")
				}
			case draining:
				l.skip(d, metrics.SkipShutdown) // the consumer is cancelled; these are redelivered
			default:
				t, live := l.sess.track(d, l.Guard.Epoch())
				if !live {
					l.skip(d, metrics.SkipStale)
					continue
				}
				if redelivered(d) {
					l.Metrics.Redelivered()
				}
				l.dropAcks(l.acks.read(t))
				pending = append(pending, t)
			}
		case r := <-results:
			busy--
			l.settle(r)
			settled()
		case <-flushC:
			flushC = nil
			flush(false)
		case <-stop:
			if err := l.Channel.Cancel(); err != nil {
				l.Log.Warn("cancel consumer", "err", err)
			}
			startDraining("shutdown")
		case <-grace:
			grace = nil
			l.Log.Warn("shutdown grace over; cancelling handlers", "in_flight", busy)
			abort()
		}
	}
}

// handle runs the handler for t, inside the delivery's consumer span, and
// sends its result; it never blocks on results (the channel holds
// Concurrency results).
func (l *Loop) handle(ctx context.Context, t tracked, results chan<- result) {
	m := Message{
		ID:          t.d.MessageId,
		Headers:     t.d.Headers,
		Body:        t.d.Body,
		Redelivered: redelivered(t.d),
		Attempt:     intHeader(t.d.Headers, HeaderRetryCount) + 1,
	}
	r := result{t: t, msg: m}
	start := time.Now()
	ctx, span := startDelivery(ctx, t.d, m)
	defer func() { endDelivery(span, r.outcome, r.err) }()
	func() {
		defer func() {
			if p := recover(); p != nil {
				r.outcome, r.err = metrics.TransientRetry, fmt.Errorf("handler panic: %v", p)
			}
		}()
		r.outcome, r.err = l.Handler.Handle(ctx, m)
	}()
	l.Metrics.Processed(time.Since(start))
	r.aborted = ctx.Err() != nil
	results <- r
}

// skip leaves d unsettled on purpose.
func (l *Loop) skip(d amqp.Delivery, reason string) {
	l.Metrics.Skipped(reason)
	l.Log.Debug("delivery left unsettled", "reason", reason, "message_id", d.MessageId, "delivery_tag", d.DeliveryTag)
}
