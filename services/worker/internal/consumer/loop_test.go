package consumer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/services/worker/internal/metrics"
)

// fakeBroker records settlements and publishes; it is the loop's Channel,
// Publisher and Guard.
type fakeBroker struct {
	mu        sync.Mutex
	events    []string
	published []amqp.Publishing
	failPub   bool
	epoch     uint64
	cancelled chan struct{}
	once      sync.Once
}

func newFakeBroker() *fakeBroker { return &fakeBroker{cancelled: make(chan struct{})} }

func (f *fakeBroker) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, fmt.Sprintf(format, args...))
}

func (f *fakeBroker) Ack(tag uint64, multiple bool) error {
	if multiple {
		f.record("ack %d multiple", tag)
	} else {
		f.record("ack %d", tag)
	}
	return nil
}
func (f *fakeBroker) Nack(tag uint64, requeue bool) error {
	f.record("nack %d requeue=%t", tag, requeue)
	return nil
}
func (f *fakeBroker) Cancel() error { f.once.Do(func() { close(f.cancelled) }); return nil }

func (f *fakeBroker) Publish(_ context.Context, queue string, msg amqp.Publishing) error {
	f.mu.Lock()
	fail := f.failPub
	f.mu.Unlock()
	if fail {
		f.record("publish %s %s failed", queue, msg.MessageId)
		return errors.New("nacked")
	}
	f.record("publish %s %s", queue, msg.MessageId)
	f.mu.Lock()
	f.published = append(f.published, msg)
	f.mu.Unlock()
	return nil
}

func (f *fakeBroker) Epoch() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.epoch
}

func (f *fakeBroker) Do(epoch uint64, fn func() error) (bool, error) {
	if f.Epoch() != epoch {
		return false, nil
	}
	return true, fn()
}

func (f *fakeBroker) bump() {
	f.mu.Lock()
	f.epoch++
	f.mu.Unlock()
}

func (f *fakeBroker) Events() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.events...)
}

var testRetries = []RetryQueue{{"q.retry.100ms", 100 * time.Millisecond}, {"q.retry.300ms", 300 * time.Millisecond}, {"q.retry.1s", time.Second}}

func testConfig() Config {
	return Config{Concurrency: 2, Retries: testRetries, DeadLetter: "q.dlq", Grace: time.Second, PublishTimeout: time.Second}
}

// startLoop runs a loop over a fresh delivery channel until the test ends.
// stop cancels it and returns Run's error.
func startLoop(t *testing.T, cfg Config, f *fakeBroker, h Handler) (deliveries chan amqp.Delivery, stop func() error) {
	t.Helper()
	return startLoopOn(t, cfg, f, f, h)
}

// startLoopOn is startLoop with ch as the loop's Channel.
func startLoopOn(t *testing.T, cfg Config, ch Channel, f *fakeBroker, h Handler) (deliveries chan amqp.Delivery, stop func() error) {
	t.Helper()
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	deliveries = make(chan amqp.Delivery)
	l := New(cfg, Deps{Handler: h, Channel: ch, Publisher: f, Guard: f, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: m})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, deliveries) }()
	go func() { // the library closes the delivery channel once the consumer is cancelled
		<-f.cancelled
		close(deliveries)
	}()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("loop did not stop")
			}
		})
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return deliveries, stop
}

func delivery(tag uint64, retries int) amqp.Delivery {
	h := amqp.Table{"x-idempotency-key": "k"}
	if retries > 0 {
		h[HeaderRetryCount] = int32(retries)
	}
	return amqp.Delivery{DeliveryTag: tag, MessageId: fmt.Sprintf("pay_%d", tag), Headers: h, Body: []byte(`{}`)}
}

// waitEvents waits until f has recorded n events.
func waitEvents(t *testing.T, f *fakeBroker, n int) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(f.Events()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("want %d events, have %q", n, f.Events())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return f.Events()
}

func TestLoopSettles(t *testing.T) {
	tests := []struct {
		name    string
		retries int // x-retry-count of the delivery
		err     error
		failPub bool
		want    []string
		header  amqp.Table // headers the published copy must carry (subset)
	}{
		{name: "success acks", want: []string{"ack 1"}},
		{
			name: "retry publishes to the first retry queue, then acks",
			err:  Retry(errors.New("psp down"), 0),
			want: []string{"publish q.retry.100ms pay_1", "ack 1"}, header: amqp.Table{HeaderRetryCount: int32(1)},
		},
		{
			name: "plain error retries too", err: errors.New("boom"),
			want: []string{"publish q.retry.100ms pay_1", "ack 1"},
		},
		{
			name: "second retry uses the second queue", retries: 1, err: Retry(errors.New("x"), 0),
			want: []string{"publish q.retry.300ms pay_1", "ack 1"}, header: amqp.Table{HeaderRetryCount: int32(2)},
		},
		{
			name: "retry after picks a long enough queue", err: Retry(errors.New("in progress"), 250*time.Millisecond),
			want: []string{"publish q.retry.300ms pay_1", "ack 1"},
		},
		{
			name: "retry after beyond the last queue uses the last", err: Retry(errors.New("in progress"), time.Hour),
			want: []string{"publish q.retry.1s pay_1", "ack 1"},
		},
		{
			name: "used-up delays keep retrying at the last one", retries: 2, err: Retry(errors.New("x"), 0),
			want: []string{"publish q.retry.1s pay_1", "ack 1"}, header: amqp.Table{HeaderRetryCount: int32(3)},
		},
		{
			name: "retries never run out", retries: 500, err: errors.New("psp down"),
			want: []string{"publish q.retry.1s pay_1", "ack 1"}, header: amqp.Table{HeaderRetryCount: int32(501)},
		},
		{
			name: "reject dead-letters at once", err: Reject(errors.New("bad json")),
			want: []string{"publish q.dlq pay_1", "ack 1"}, header: amqp.Table{HeaderDeadLetterReason: "reject: bad json"},
		},
		{
			name: "failed retry publish requeues the original", err: Retry(errors.New("x"), 0), failPub: true,
			want: []string{"publish q.retry.100ms pay_1 failed", "nack 1 requeue=true"},
		},
		{
			name: "failed dead-letter publish rejects to the DLX", err: Reject(errors.New("x")), failPub: true,
			want: []string{"publish q.dlq pay_1 failed", "nack 1 requeue=false"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeBroker()
			f.failPub = tt.failPub
			deliveries, _ := startLoop(t, testConfig(), f, HandlerFunc(func(context.Context, Message) (string, error) {
				return metrics.Charged, tt.err
			}))
			deliveries <- delivery(1, tt.retries)
			waitEvents(t, f, len(tt.want))
			time.Sleep(20 * time.Millisecond) // nothing more may come
			if diff := cmp.Diff(tt.want, f.Events()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if tt.header != nil {
				if len(f.published) != 1 {
					t.Fatalf("published %d copies, want 1", len(f.published))
				}
				p := f.published[0]
				for k, v := range tt.header {
					if diff := cmp.Diff(v, p.Headers[k]); diff != "" {
						t.Errorf("header %s (-want +got):\n%s", k, diff)
					}
				}
				if p.MessageId != "pay_1" || p.DeliveryMode != amqp.Persistent || string(p.Body) != "{}" {
					t.Errorf("copy = id %q mode %d body %q, want pay_1, persistent, {}", p.MessageId, p.DeliveryMode, p.Body)
				}
			}
		})
	}
}

func TestLoopHandlerSeesAttempt(t *testing.T) {
	t.Parallel()
	f := newFakeBroker()
	got := make(chan Message, 1)
	deliveries, _ := startLoop(t, testConfig(), f, HandlerFunc(func(_ context.Context, m Message) (string, error) {
		got <- m
		return metrics.Charged, nil
	}))
	d := delivery(1, 2)
	d.Headers[headerDeliveryCount] = int64(1)
	deliveries <- d
	m := <-got
	if m.Attempt != 3 || !m.Redelivered || m.ID != "pay_1" {
		t.Errorf("message = attempt %d redelivered %t id %q, want 3, true, pay_1", m.Attempt, m.Redelivered, m.ID)
	}
}

func TestLoopBoundsConcurrencyAndSettlesEachOnce(t *testing.T) {
	t.Parallel()
	const n = 50
	f := newFakeBroker()
	var running, peak atomic.Int32
	cfg := testConfig()
	cfg.Concurrency = 3
	deliveries, stop := startLoop(t, cfg, f, HandlerFunc(func(context.Context, Message) (string, error) {
		now := running.Add(1)
		for {
			p := peak.Load()
			if now <= p || peak.CompareAndSwap(p, now) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
		running.Add(-1)
		return metrics.Charged, nil
	}))
	for i := range n {
		deliveries <- delivery(uint64(i+1), 0)
	}
	waitEvents(t, f, n)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	seen := make(map[string]int)
	for _, e := range f.Events() {
		seen[e]++
	}
	for i := range n {
		if c := seen[fmt.Sprintf("ack %d", i+1)]; c != 1 {
			t.Errorf("delivery %d acked %d times, want 1", i+1, c)
		}
	}
	if p := peak.Load(); p > 3 {
		t.Errorf("peak concurrency %d, want at most 3", p)
	}
}

func TestLoopLeavesStaleDeliveries(t *testing.T) {
	t.Parallel()
	f := newFakeBroker()
	release := make(chan struct{})
	deliveries, _ := startLoop(t, testConfig(), f, HandlerFunc(func(_ context.Context, m Message) (string, error) {
		if m.ID == "pay_1" {
			<-release
		}
		return metrics.Charged, nil
	}))
	deliveries <- delivery(1, 0) // in the handler when the session is lost
	time.Sleep(20 * time.Millisecond)
	f.bump()                     // connection lost; the broker requeues tag 1
	deliveries <- delivery(2, 0) // a leftover of the lost session
	deliveries <- delivery(1, 0) // first delivery of the new session
	close(release)
	waitEvents(t, f, 1)
	time.Sleep(50 * time.Millisecond)
	if diff := cmp.Diff([]string{"ack 1"}, f.Events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestLoopShutdown(t *testing.T) {
	tests := []struct {
		name     string
		grace    time.Duration
		work     time.Duration // how long the in-flight handler runs
		wantAcks []string
	}{
		{name: "in-flight work finishes within the grace", grace: time.Second, work: 100 * time.Millisecond, wantAcks: []string{"ack 1"}},
		{name: "work beyond the grace is left unacked", grace: 50 * time.Millisecond, work: time.Hour, wantAcks: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeBroker()
			cfg := testConfig()
			cfg.Grace = tt.grace
			cfg.Concurrency = 1
			started := make(chan struct{}, 1)
			deliveries, stop := startLoop(t, cfg, f, HandlerFunc(func(ctx context.Context, m Message) (string, error) {
				started <- struct{}{}
				select {
				case <-time.After(tt.work):
					return metrics.Charged, nil
				case <-ctx.Done():
					return metrics.TransientRetry, ctx.Err()
				}
			}))
			deliveries <- delivery(1, 0)
			deliveries <- delivery(2, 0) // waiting for a handler: must not start after shutdown
			<-started
			start := time.Now()
			if err := stop(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if d := time.Since(start); d > tt.grace+time.Second {
				t.Errorf("shutdown took %s, grace %s", d, tt.grace)
			}
			select {
			case <-f.cancelled:
			default:
				t.Error("consumer not cancelled")
			}
			if diff := cmp.Diff(tt.wantAcks, f.Events()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoopDeliveriesClosed(t *testing.T) {
	t.Parallel()
	f := newFakeBroker()
	m, _ := metrics.New(prometheus.NewRegistry())
	l := New(testConfig(), Deps{Handler: HandlerFunc(func(context.Context, Message) (string, error) { return "", nil }),
		Channel: f, Publisher: f, Guard: f, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: m})
	deliveries := make(chan amqp.Delivery)
	close(deliveries)
	if err := l.Run(context.Background(), deliveries); !errors.Is(err, ErrDeliveriesClosed) {
		t.Errorf("Run = %v, want ErrDeliveriesClosed", err)
	}
}
