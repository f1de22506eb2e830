package idem_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/pkg/idem"
)

// TestFullRedisFailsClosed: Redis out of memory (used memory above
// maxmemory, policy noeviction, as every Redis oncepay deploys runs) refuses
// every write. Begin of a new key fails closed with ErrFull, which also
// matches ErrUnavailable, and writes nothing; a completed key is still
// replayed and a reused key still reported, since both only read. A lease
// acquired before cannot be completed or extended (the stage stays
// PENDING) but can be released. Once Redis has room again, all of it works.
func TestFullRedisFailsClosed(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := srv.Client()
	var mu sync.Mutex
	var outcomes []string // of the operations while Redis is full
	observing := false
	s := idem.New(rdb, idem.Config{Lease: time.Minute, Retention: time.Hour, Observe: func(e idem.Event) {
		mu.Lock()
		defer mu.Unlock()
		if observing {
			outcomes = append(outcomes, string(e.Op)+" "+e.Outcome)
		}
	}})
	ctx := context.Background()

	done := newKey(t) // completed before Redis is full
	c := begin(t, s, done, "api", "fp")
	if err := c.Lease.Complete(ctx, []byte("the first answer")); err != nil {
		t.Fatal(err)
	}
	held := newKey(t) // acquired before, ended while full
	heldClaim := begin(t, s, held, "api", "fp")
	released := begin(t, s, newKey(t), "api", "fp")

	srv.Fill()
	mu.Lock()
	observing = true
	mu.Unlock()

	fresh := newKey(t)
	_, err := s.Begin(ctx, fresh, "api", "fp")
	if !errors.Is(err, idem.ErrFull) || !errors.Is(err, idem.ErrUnavailable) || !strings.Contains(err.Error(), "OOM") {
		t.Fatalf("Begin of a new key on a full Redis: %v; want ErrFull (and ErrUnavailable) wrapping Redis's OOM reply", err)
	}
	if n, err := rdb.Exists(ctx, fresh.String()).Result(); err != nil || n != 0 {
		t.Errorf("the refused Begin left %s behind (EXISTS %d, %v)", fresh, n, err)
	}

	replay, err := s.Begin(ctx, done, "api", "fp")
	if err != nil || replay.Outcome != idem.Completed || string(replay.Result) != "the first answer" {
		t.Errorf("Begin of a completed key on a full Redis: %+v, %v; want Completed with its stored answer", replay, err)
	}
	if _, err := s.Begin(ctx, done, "api", "another fp"); !errors.Is(err, idem.ErrMismatch) {
		t.Errorf("Begin of a completed key with another fingerprint on a full Redis: %v, want ErrMismatch", err)
	}
	if _, err := s.Begin(ctx, held, "api", "fp"); !errors.Is(err, idem.ErrInProgress) {
		t.Errorf("Begin of a held key on a full Redis: %v, want ErrInProgress", err)
	}

	if err := heldClaim.Lease.Complete(ctx, []byte("late")); !errors.Is(err, idem.ErrFull) {
		t.Errorf("Complete on a full Redis: %v, want ErrFull", err)
	}
	if err := heldClaim.Lease.Extend(ctx); !errors.Is(err, idem.ErrFull) {
		t.Errorf("Extend on a full Redis: %v, want ErrFull", err)
	}
	if state, err := rdb.HGet(ctx, held.String(), "api:state").Result(); err != nil || state != "P" {
		t.Errorf("after the refused Complete the stage is %q (%v), want still P", state, err)
	}
	if err := released.Lease.Release(ctx); err != nil {
		t.Errorf("Release on a full Redis: %v, want nil (it only deletes)", err)
	}

	mu.Lock()
	observing = false
	// Metrics label the refusals "full", apart from an unreachable Redis.
	want := []string{"begin full", "begin replayed", "begin mismatch", "begin in_progress", "complete full", "extend full", "release ok"}
	if !slices.Equal(outcomes, want) {
		t.Errorf("outcomes reported while full:\n got %q\nwant %q", outcomes, want)
	}
	mu.Unlock()

	srv.Unfill()
	if c := begin(t, s, fresh, "api", "fp"); c.Outcome != idem.Acquired {
		t.Errorf("Begin of the new key once Redis has room: %v, want Acquired", c.Outcome)
	}
	if err := heldClaim.Lease.Complete(ctx, []byte("late")); err != nil {
		t.Errorf("Complete once Redis has room: %v", err)
	}
}
