package naive_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/naive"
)

// These tests assert the flaws that docs/failure-windows.md describes. They
// pass while the strategies stay broken in exactly that way: a failure here
// means the documentation no longer tells the truth.

// TestGetThenSetConcurrentBeginsAllAcquire: every request that reads before
// the first one writes runs the work (the real boundary lets exactly one
// through: idem's RaceOneWinner contract case).
func TestGetThenSetConcurrentBeginsAllAcquire(t *testing.T) {
	t.Parallel()
	s := naive.NewGetThenSet(newRedis(t), idem.Config{})
	k := newKey(t, "")
	const n = 16
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		acquired int
	)
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			c, err := s.Begin(context.Background(), k, "charge", "fp")
			if err != nil {
				t.Error(err)
				return
			}
			if c.Outcome == idem.Acquired {
				mu.Lock()
				acquired++
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if acquired != n {
		t.Fatalf("%d of %d concurrent Begins acquired; get-then-set lets every one through", acquired, n)
	}
}

// TestGetThenSetCrashedRunRunsAgain: a run that died before writing its
// result leaves nothing behind; the retry (a client's, or the broker's
// redelivery) runs the work again. Whether that charges twice depends on
// what the work sends downstream: a fresh psp key per attempt does.
func TestGetThenSetCrashedRunRunsAgain(t *testing.T) {
	t.Parallel()
	s := naive.NewGetThenSet(newRedis(t), idem.Config{})
	k := newKey(t, "")
	first, err := s.Begin(context.Background(), k, "charge", "fp")
	if err != nil || first.Outcome != idem.Acquired {
		t.Fatalf("first Begin = %+v, %v", first, err)
	}
	// ... the owner is killed here, mid-work ...
	retry, err := s.Begin(context.Background(), k, "charge", "fp")
	if err != nil || retry.Outcome != idem.Acquired {
		t.Fatalf("retry after the crash = %+v, %v; get-then-set runs it again", retry, err)
	}
}

// TestSetNXMarkerCrashedOwnerBlocksTheKey: the marker has no owner and no
// lease, so a crashed owner's marker answers "in progress" long after any
// lease would have ended, until the retention (here 1h) expires it.
func TestSetNXMarkerCrashedOwnerBlocksTheKey(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	const lease = 100 * time.Millisecond
	s := naive.NewSetNXMarker(rdb, idem.Config{Lease: lease, Retention: time.Hour})
	k := newKey(t, "")
	if c, err := s.Begin(context.Background(), k, "api", "fp"); err != nil || c.Outcome != idem.Acquired {
		t.Fatalf("first Begin = %+v, %v", c, err)
	}
	// ... the owner is killed here: no Complete, no Release ...
	time.Sleep(3 * lease)
	_, err := s.Begin(context.Background(), k, "api", "fp")
	if ip, ok := errors.AsType[*idem.InProgressError](err); !ok {
		t.Fatalf("Begin after the owner died = %v, want in progress (the dead owner's marker)", err)
	} else if ip.RetryAfter <= 0 {
		t.Errorf("RetryAfter = %s", ip.RetryAfter)
	}
	ttl, err := rdb.PTTL(context.Background(), naive.Prefix+"{"+k.Merchant()+":"+k.ID()+"}:api").Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl < 59*time.Minute {
		t.Errorf("marker TTL = %s, want about the 1h retention: nothing frees the key sooner", ttl)
	}
}

// TestSetNXMarkerDeleteHasNoOwner: a late delete from an earlier owner's
// error path removes a newer owner's marker, and a third caller acquires
// while the second still works: two owners at once.
func TestSetNXMarkerDeleteHasNoOwner(t *testing.T) {
	t.Parallel()
	s := naive.NewSetNXMarker(newRedis(t), idem.Config{})
	ctx := context.Background()
	k := newKey(t, "")
	a, err := s.Begin(ctx, k, "charge", "fp")
	if err != nil || a.Outcome != idem.Acquired {
		t.Fatalf("A = %+v, %v", a, err)
	}
	if err := a.Lease.Release(ctx); err != nil { // A's work failed
		t.Fatal(err)
	}
	b, err := s.Begin(ctx, k, "charge", "fp")
	if err != nil || b.Outcome != idem.Acquired {
		t.Fatalf("B = %+v, %v", b, err)
	}
	if err := a.Lease.Release(ctx); err != nil { // A's error path runs again (a retried DEL)
		t.Fatalf("A's second Release = %v; with no owner check it succeeds", err)
	}
	c, err := s.Begin(ctx, k, "charge", "fp")
	if err != nil || c.Outcome != idem.Acquired {
		t.Fatalf("C while B still works = %+v, %v; want acquired (B's marker was deleted by A)", c, err)
	}
}

// TestLockThenCheckLateCompletionOverwrites: the first owner outlives its
// mark, a second owner runs the same work and completes, then the first
// completes too, unconditionally, over the second's result, and is told
// nothing. The real boundary answers the stale owner ErrLost and keeps the
// newer result (idem's TakeoverFencesTheStaleOwner contract case).
func TestLockThenCheckLateCompletionOverwrites(t *testing.T) {
	t.Parallel()
	const lease = 150 * time.Millisecond
	s := naive.NewLockThenCheck(newRedis(t), idem.Config{Lease: lease}, 0)
	ctx := context.Background()
	k := newKey(t, "")
	first, err := s.Begin(ctx, k, "charge", "fp")
	if err != nil || first.Outcome != idem.Acquired {
		t.Fatalf("first = %+v, %v", first, err)
	}
	if _, err := s.Begin(ctx, k, "charge", "fp"); !errors.Is(err, idem.ErrInProgress) {
		t.Fatalf("Begin while the mark is live = %v, want in progress", err)
	}
	time.Sleep(2 * lease) // the first owner stalls past its mark (a slow psp call, a GC pause)

	second, err := s.Begin(ctx, k, "charge", "fp")
	if err != nil || second.Outcome != idem.Acquired {
		t.Fatalf("second = %+v, %v; want acquired once the mark expired", second, err)
	}
	if err := second.Lease.Complete(ctx, []byte("second")); err != nil {
		t.Fatal(err)
	}
	if err := first.Lease.Complete(ctx, []byte("first, stale")); err != nil {
		t.Fatalf("stale Complete = %v; lock-then-check writes it anyway and reports success", err)
	}
	replay, err := s.Begin(ctx, k, "charge", "fp")
	if err != nil || replay.Outcome != idem.Completed || string(replay.Result) != "first, stale" {
		t.Fatalf("replay = %+v (%q), %v; want the stale owner's result, which overwrote the newer one", replay, replay.Result, err)
	}
}

// TestLockThenCheckLateReleaseDeletesNewerMark: the stale owner's error
// path deletes the newer owner's mark, and a third caller acquires while the
// second still works.
func TestLockThenCheckLateReleaseDeletesNewerMark(t *testing.T) {
	t.Parallel()
	const lease = 150 * time.Millisecond
	s := naive.NewLockThenCheck(newRedis(t), idem.Config{Lease: lease}, 0)
	ctx := context.Background()
	k := newKey(t, "")
	first, err := s.Begin(ctx, k, "charge", "fp")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * lease)
	if second, err := s.Begin(ctx, k, "charge", "fp"); err != nil || second.Outcome != idem.Acquired {
		t.Fatalf("second = %+v, %v", second, err)
	}
	if err := first.Lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if third, err := s.Begin(ctx, k, "charge", "fp"); err != nil || third.Outcome != idem.Acquired {
		t.Fatalf("third while the second works = %+v, %v; want acquired (the stale release deleted the mark)", third, err)
	}
}

// TestTrustingAcquiresEveryTime: no boundary; every delivery runs.
func TestTrustingAcquiresEveryTime(t *testing.T) {
	t.Parallel()
	s := naive.NewTrusting(idem.Config{})
	ctx := context.Background()
	k := newKey(t, "")
	for i := range 3 {
		c, err := s.Begin(ctx, k, "charge", "fp")
		if err != nil || c.Outcome != idem.Acquired {
			t.Fatalf("Begin %d = %+v, %v", i, c, err)
		}
		if err := c.Lease.Complete(ctx, []byte("done")); err != nil {
			t.Fatal(err)
		}
	}
}
