package idemstage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemstage"
	"github.com/redis/go-redis/v9"
)

// TestStallEndsTheWorkBeforeTakeover: Redis stops answering (frozen) while
// the work runs, so no heartbeat gets through. The work's context must end,
// with cause idem.ErrLost, before the lease can be taken over (the lease
// starts no earlier than Do was called); once Redis is back, a redelivery
// takes the stage over and completes it, and the stalled Do reports
// ErrLost and completes nothing.
func TestStallEndsTheWorkBeforeTakeover(t *testing.T) {
	t.Parallel()
	const lease = time.Second
	srv := redistest.StartServer(t)
	opt := &redis.Options{Addr: srv.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	store := idem.New(rdb, idem.Config{Lease: lease, Timeout: 200 * time.Millisecond})
	s := idemstage.New(store, idemstage.Config{Stage: "ship"})
	k := newKey(t)
	ctx := context.Background()

	type ended struct {
		at    time.Time
		cause error
	}
	workEnded := make(chan ended, 1)
	started := time.Now() // the lease cannot end before started + lease
	_, err := s.Do(ctx, k, "fp", func(ctx context.Context, _ idemstage.Attempt) ([]byte, error) {
		srv.Freeze()
		select {
		case <-ctx.Done():
		case <-time.After(3 * lease): // the helper never stopped the work
		}
		workEnded <- ended{time.Now(), context.Cause(ctx)}
		return nil, errors.New("stalled")
	})
	srv.Thaw()
	e := <-workEnded
	if !errors.Is(e.cause, idem.ErrLost) {
		t.Errorf("work's context ended with %v, want ErrLost", e.cause)
	}
	if takeover := started.Add(lease); !e.at.Before(takeover) {
		t.Errorf("work ended %s after the lease could be taken over", e.at.Sub(takeover))
	} else {
		t.Logf("work ended %s before the lease could be taken over", takeover.Sub(e.at))
	}
	if !errors.Is(err, idem.ErrLost) {
		t.Errorf("stalled Do: %v, want ErrLost", err)
	}

	d, err := deliver(ctx, s, k, func(_ context.Context, a idemstage.Attempt) ([]byte, error) {
		if !a.TakeOver || a.Number != 2 {
			t.Errorf("redelivery's attempt %+v, want number 2 with takeover", a)
		}
		return []byte("shipped"), nil
	})
	if err != nil || string(d.Result) != "shipped" || d.Replayed {
		t.Errorf("redelivery: %+v %v; want the work's result", d, err)
	}
}
