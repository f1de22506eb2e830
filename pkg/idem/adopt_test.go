package idem_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
)

// TestCompleteAsRepairsToTheHolder: after Redis lost a key, an intruder
// (fingerprint "b") claims the stage; its backstop finds the key held by
// "a" and completes the stage as "a" with a's answer. a's retries replay
// that answer, b's get ErrMismatch, and the hash holds a's fingerprint.
func TestCompleteAsRepairsToTheHolder(t *testing.T) {
	t.Parallel()
	s, rdb := newStore(t, idem.Config{})
	ctx := context.Background()
	k := newKey(t)
	intruder := begin(t, s, k, "api", "b")
	if intruder.Outcome != idem.Acquired {
		t.Fatalf("intruder's Begin = %+v, want acquired", intruder)
	}
	if err := intruder.Lease.CompleteAs(ctx, "a", []byte("a's 202")); err != nil {
		t.Fatalf("CompleteAs: %v", err)
	}
	if err := intruder.Lease.CompleteAs(ctx, "a", []byte("a's 202")); err != nil {
		t.Fatalf("CompleteAs again by the same owner: %v, want nil", err)
	}
	for range 2 {
		if r := begin(t, s, k, "api", "a"); r.Outcome != idem.Completed || string(r.Result) != "a's 202" {
			t.Fatalf("holder's retry = %+v, want its answer replayed", r)
		}
		if _, err := s.Begin(ctx, k, "api", "b"); !errors.Is(err, idem.ErrMismatch) {
			t.Fatalf("intruder's retry = %v, want ErrMismatch", err)
		}
	}
	fields, err := rdb.HGetAll(ctx, k.String()).Result()
	if err != nil {
		t.Fatal(err)
	}
	if fields["api:fp"] != "a" || fields["api:state"] != "C" {
		t.Errorf("hash = %v, want api:fp a, api:state C", fields)
	}
	if ttl := rdb.PTTL(ctx, k.String()).Val(); ttl < 23*time.Hour {
		t.Errorf("key TTL %s, want the retention", ttl)
	}
}

// TestCompleteAsIsOwnerChecked: a stale owner whose stage was taken over,
// or released, cannot repair it: ErrLost, and nothing is written.
func TestCompleteAsIsOwnerChecked(t *testing.T) {
	t.Parallel()
	s, rdb := newStore(t, idem.Config{Lease: 50 * time.Millisecond})
	ctx := context.Background()

	t.Run("taken over", func(t *testing.T) {
		k := newKey(t)
		stale := begin(t, s, k, "api", "b")
		time.Sleep(60 * time.Millisecond)
		newer := begin(t, s, k, "api", "b")
		if !newer.TakeOver {
			t.Fatalf("second Begin = %+v, want a takeover", newer)
		}
		if err := stale.Lease.CompleteAs(ctx, "a", []byte("x")); !errors.Is(err, idem.ErrLost) {
			t.Fatalf("stale CompleteAs: %v, want ErrLost", err)
		}
		if fp := rdb.HGet(ctx, k.String(), "api:fp").Val(); fp != "b" {
			t.Errorf("api:fp = %q after a lost CompleteAs, want b (unchanged)", fp)
		}
	})
	t.Run("released", func(t *testing.T) {
		k := newKey(t)
		c := begin(t, s, k, "api", "b")
		if err := c.Lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.Lease.CompleteAs(ctx, "a", []byte("x")); !errors.Is(err, idem.ErrLost) {
			t.Fatalf("CompleteAs after Release: %v, want ErrLost", err)
		}
		fields := rdb.HGetAll(ctx, k.String()).Val()
		if fields["api:state"] != "" || fields["api:fp"] != "" || fields["api:result"] != "" {
			t.Errorf("hash = %v after a lost CompleteAs, want no state, fingerprint or result", fields)
		}
	})
}
