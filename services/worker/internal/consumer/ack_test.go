package consumer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/services/worker/internal/metrics"
)

func trackedTag(tag uint64) tracked {
	return tracked{d: amqp.Delivery{DeliveryTag: tag}, session: 1, epoch: 0}
}

func describe(ss []sent) []string {
	var out []string
	for _, s := range ss {
		if s.multiple {
			out = append(out, fmt.Sprintf("ack %d multiple", s.tag))
		} else {
			out = append(out, fmt.Sprintf("ack %d", s.tag))
		}
	}
	return out
}

func TestAcksCoverOnlyDecidedPrefix(t *testing.T) {
	t.Parallel()
	var a acks
	for tag := uint64(1); tag <= 6; tag++ {
		a.read(trackedTag(tag))
	}
	a.queue(trackedTag(2), metrics.Charged)
	a.queue(trackedTag(1), metrics.Charged)
	a.decided(trackedTag(3)) // nacked
	a.queue(trackedTag(5), metrics.Charged)
	// 4 and 6 open: 1 and 2 go in one multiple ack; 5 waits one flush.
	if diff := cmp.Diff([]string{"ack 2 multiple"}, describe(a.flush(false))); diff != "" {
		t.Errorf("first flush (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ack 5"}, describe(a.flush(false))); diff != "" {
		t.Errorf("second flush (-want +got):\n%s", diff)
	}
	a.queue(trackedTag(6), metrics.Charged)
	if diff := cmp.Diff([]string{"ack 6"}, describe(a.flush(true))); diff != "" {
		t.Errorf("final flush (-want +got):\n%s", diff)
	}
}

func TestAcksNewSessionDropsWaiting(t *testing.T) {
	t.Parallel()
	var a acks
	a.read(trackedTag(1))
	a.queue(trackedTag(1), metrics.Charged)
	next := tracked{d: amqp.Delivery{DeliveryTag: 1}, session: 2, epoch: 1}
	if got := a.read(next); len(got) != 1 {
		t.Fatalf("dropped %d acks, want 1", len(got))
	}
	a.queue(trackedTag(1), metrics.Charged) // a late result of the old session
	if got := a.flush(true); len(got) != 0 {
		t.Errorf("flush = %v, want nothing", describe(got))
	}
}

// ackLedger is a Channel that keeps the broker's view of one session:
// which tags are outstanding, and how each was settled. It fails the test
// when a tag is settled twice or a multiple ack covers a tag that was not
// meant to be acked.
type ackLedger struct {
	*fakeBroker
	mu      sync.Mutex
	t       *testing.T
	out     map[uint64]bool   // outstanding, read and not settled
	nackFor map[uint64]bool   // tags the handler fails
	how     map[uint64]string // tag -> "ack" | "nack"
	multi   int               // multiple acks received
}

func (b *ackLedger) settle(tag uint64, how string) {
	if !b.out[tag] {
		b.t.Errorf("%s of tag %d, which is not outstanding", how, tag)
		return
	}
	if how == "ack" && b.nackFor[tag] {
		b.t.Errorf("tag %d acked, but its handler failed", tag)
	}
	delete(b.out, tag)
	b.how[tag] = how
}

func (b *ackLedger) Ack(tag uint64, multiple bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !multiple {
		b.settle(tag, "ack")
		return nil
	}
	b.multi++
	if !b.out[tag] {
		b.t.Errorf("multiple ack with tag %d, which is not outstanding", tag)
	}
	for t := range b.out {
		if t <= tag {
			b.settle(t, "ack")
		}
	}
	return nil
}

func (b *ackLedger) Nack(tag uint64, _ bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settle(tag, "nack")
	return nil
}

func (b *ackLedger) settled() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.how)
}

// TestLoopBatchesAcksOutOfOrder runs many handlers that finish in random
// order, some failing (their retry publish fails, so they are nacked), and
// checks with the broker's bookkeeping that every delivery is settled once,
// the failed ones by a nack only.
func TestLoopBatchesAcksOutOfOrder(t *testing.T) {
	t.Parallel()
	const n = 500
	b := &ackLedger{fakeBroker: newFakeBroker(), t: t, out: map[uint64]bool{}, nackFor: map[uint64]bool{}, how: map[uint64]string{}}
	b.failPub = true // a failed handler's retry copy is not published: it is nacked
	for tag := uint64(1); tag <= n; tag++ {
		b.out[tag] = true
		b.nackFor[tag] = tag%7 == 0
	}
	cfg := testConfig()
	cfg.Concurrency, cfg.AckDelay, cfg.AckBatch = 16, 5*time.Millisecond, 8
	deliveries, stop := startLoopOn(t, cfg, b, b.fakeBroker, HandlerFunc(func(_ context.Context, m Message) (string, error) {
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
		var tag uint64
		fmt.Sscanf(strings.TrimPrefix(m.ID, "pay_"), "%d", &tag)
		if tag%7 == 0 {
			return metrics.TransientRetry, errors.New("psp down")
		}
		return metrics.Charged, nil
	}))
	for tag := uint64(1); tag <= n; tag++ {
		deliveries <- delivery(tag, 0)
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.settled() < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.out) != 0 {
		t.Errorf("%d deliveries never settled", len(b.out))
	}
	if b.multi == 0 {
		t.Error("no multiple ack sent")
	}
	t.Logf("%d deliveries settled with %d multiple acks", n, b.multi)
	for tag := uint64(1); tag <= n; tag++ {
		want := "ack"
		if b.nackFor[tag] {
			want = "nack"
		}
		if got := b.how[tag]; got != want {
			t.Errorf("tag %d settled by %q, want %q", tag, got, want)
		}
	}
}

func TestLoopBatchedAckWaitsForSlowHandler(t *testing.T) {
	t.Parallel()
	f := newFakeBroker()
	release := make(chan struct{})
	cfg := testConfig()
	cfg.Concurrency, cfg.AckDelay, cfg.AckBatch = 4, 10*time.Millisecond, 100
	deliveries, stop := startLoop(t, cfg, f, HandlerFunc(func(_ context.Context, m Message) (string, error) {
		if m.ID == "pay_2" {
			<-release
		}
		return metrics.Charged, nil
	}))
	for tag := uint64(1); tag <= 4; tag++ {
		deliveries <- delivery(tag, 0)
	}
	// 1 goes alone below the slow 2; 3 and 4 wait one flush, then go alone.
	got := waitEvents(t, f, 3)
	slices.Sort(got)
	if diff := cmp.Diff([]string{"ack 1", "ack 3", "ack 4"}, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	close(release)
	got = waitEvents(t, f, 4)
	if diff := cmp.Diff("ack 2", got[3]); diff != "" {
		t.Errorf("after the slow handler (-want +got):\n%s", diff)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}
