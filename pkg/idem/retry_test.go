package idem_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/pkg/idem"
)

// Redis restarts (a private redis-server, killed and started again with
// its data) while a lease is being ended: Retry gets Complete and Release
// through once it is back, and the stage ends up completed with the result,
// or released, instead of PENDING.
func TestRetryThroughRedisRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := srv.Client()
	s := idem.New(rdb, idem.Config{Lease: 10 * time.Second, Timeout: 200 * time.Millisecond})
	ctx := context.Background()
	done, failed := newKey(t), newKey(t)
	toComplete := begin(t, s, done, "charge", "fp")
	toRelease := begin(t, s, failed, "charge", "fp")

	back := srv.Outage(800 * time.Millisecond)
	if err := toComplete.Lease.Complete(ctx, []byte("result")); !errors.Is(err, idem.ErrUnavailable) {
		t.Fatalf("Complete while Redis is down: %v, want ErrUnavailable", err)
	}
	calls := 0
	err := idem.Retry(ctx, idem.Backoff{Limit: 10 * time.Second}, func(ctx context.Context) error {
		calls++
		return toComplete.Lease.Complete(ctx, []byte("result"))
	})
	if err != nil || calls < 2 {
		t.Fatalf("Retry(Complete) = %v after %d calls, want nil after at least 2", err, calls)
	}
	if err := idem.Retry(ctx, idem.Backoff{Limit: 10 * time.Second}, toRelease.Lease.Release); err != nil {
		t.Fatalf("Retry(Release) = %v, want nil", err)
	}
	<-back

	if c := begin(t, s, done, "charge", "fp"); c.Outcome != idem.Completed || string(c.Result) != "result" {
		t.Errorf("after the restart: %+v (result %q), want completed with %q", c, c.Result, "result")
	}
	if c := begin(t, s, failed, "charge", "fp"); c.Outcome != idem.Acquired || c.TakeOver || c.Attempt != 2 {
		t.Errorf("after a retried release: %+v, want acquired at once (attempt 2, no takeover)", c)
	}
}

// A newer owner takes the stage over while Retry pauses: the stale owner's
// next Complete is ErrLost, Retry stops there and the newer result stands.
func TestRetryStopsWhenTheLeaseIsLost(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := idem.New(srv.Client(), idem.Config{Lease: 200 * time.Millisecond, Timeout: 200 * time.Millisecond})
	ctx := context.Background()
	k := newKey(t)
	stale := begin(t, s, k, "charge", "fp")

	back := srv.Outage(300 * time.Millisecond)
	calls := 0
	retried := make(chan error, 1)
	go func() {
		retried <- idem.Retry(ctx, idem.Backoff{Limit: 10 * time.Second, Initial: 2 * time.Second}, func(ctx context.Context) error {
			calls++
			return stale.Lease.Complete(ctx, []byte("stale"))
		})
	}()
	<-back
	fresh := begin(t, s, k, "charge", "fp") // the stale lease ran out meanwhile
	if !fresh.TakeOver {
		t.Fatalf("claim after the outage = %+v, want a takeover", fresh)
	}
	if err := fresh.Lease.Complete(ctx, []byte("fresh")); err != nil {
		t.Fatal(err)
	}
	if err := <-retried; !errors.Is(err, idem.ErrLost) || calls != 2 {
		t.Fatalf("Retry = %v after %d calls, want ErrLost after 2", err, calls)
	}
	if c := begin(t, s, k, "charge", "fp"); string(c.Result) != "fresh" {
		t.Errorf("result = %q, want the newer owner's %q", c.Result, "fresh")
	}
}

// With Redis gone for good, Retry gives up once the limit has passed and
// still reports ErrUnavailable.
func TestRetryGivesUpAfterTheLimit(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := idem.New(srv.Client(), idem.Config{Lease: time.Minute, Timeout: 200 * time.Millisecond})
	c := begin(t, s, newKey(t), "api", "fp")
	srv.Stop()

	const limit = 700 * time.Millisecond
	start := time.Now()
	calls := 0
	err := idem.Retry(context.Background(), idem.Backoff{Limit: limit, Initial: 100 * time.Millisecond}, func(ctx context.Context) error {
		calls++
		return c.Lease.Complete(ctx, []byte("r"))
	})
	took := time.Since(start)
	if !errors.Is(err, idem.ErrUnavailable) {
		t.Fatalf("Retry = %v, want ErrUnavailable", err)
	}
	// The last call starts at the limit and takes at most the timeout;
	// the rest is slack for a loaded machine.
	if took < limit || took > limit+200*time.Millisecond+2*time.Second || calls < 3 {
		t.Errorf("gave up after %s and %d calls, want about %s and several calls", took, calls, limit)
	}
}

// Only ErrUnavailable is retried; the context ends the pauses.
func TestRetryDecisions(t *testing.T) {
	t.Parallel()
	unavailable := fmt.Errorf("complete: %w: connection refused", idem.ErrUnavailable)
	other := errors.New("boom")
	for _, tc := range []struct {
		name    string
		results []error // what op returns, call by call; the last repeats
		limit   time.Duration
		want    error
		calls   int
	}{
		{"success", []error{nil}, time.Minute, nil, 1},
		{"lost", []error{fmt.Errorf("x: %w", idem.ErrLost)}, time.Minute, idem.ErrLost, 1},
		{"other error", []error{other}, time.Minute, other, 1},
		{"recovers", []error{unavailable, unavailable, nil}, time.Minute, nil, 3},
		{"lost after a failure", []error{unavailable, idem.ErrLost}, time.Minute, idem.ErrLost, 2},
		{"no limit, one call", []error{unavailable}, 0, idem.ErrUnavailable, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			err := idem.Retry(context.Background(), idem.Backoff{Limit: tc.limit, Initial: time.Millisecond}, func(context.Context) error {
				calls++
				return tc.results[min(calls, len(tc.results))-1]
			})
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) || calls != tc.calls {
				t.Errorf("Retry = %v after %d calls, want %v after %d", err, calls, tc.want, tc.calls)
			}
		})
	}

	t.Run("context ends", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := idem.Retry(ctx, idem.Backoff{Limit: time.Hour}, func(context.Context) error { return unavailable })
		if !errors.Is(err, idem.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
			t.Errorf("Retry = %v after %s, want ErrUnavailable and the deadline, soon after 100ms", err, time.Since(start))
		}
	})
}
