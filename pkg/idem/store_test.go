package idem_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/redis/go-redis/v9"
)

// redisDB is this package's database on the harness Redis.
const redisDB = 1

func newStore(t *testing.T, cfg idem.Config) (*idem.Store, *redis.Client) {
	t.Helper()
	opt := redistest.Options(t, redisDB)
	opt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return idem.New(rdb, cfg), rdb
}

func newKey(t *testing.T) idem.Key {
	t.Helper()
	k, err := idem.NewKey(redistest.Name(t, "m"), redistest.Name(t, "key"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func begin(t *testing.T, s *idem.Store, k idem.Key, stage, fp string) idem.Claim {
	t.Helper()
	c, err := s.Begin(context.Background(), k, stage, fp)
	if err != nil {
		t.Fatalf("Begin(%s, %s): %v", k, stage, err)
	}
	return c
}

func TestReplayIsByteExactAndRetained(t *testing.T) {
	t.Parallel()
	const retention = 90 * time.Minute
	s, rdb := newStore(t, idem.Config{Retention: retention})
	ctx := context.Background()
	k := newKey(t)
	result := make([]byte, 0, 512)
	for i := range 256 {
		result = append(result, byte(i), byte(255-i))
	}
	resp := idem.Response{Status: 202, Header: map[string][]string{"Content-Type": {"application/json"}}, Body: result}
	stored, err := resp.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	c := begin(t, s, k, "api", "fp")
	if err := c.Lease.Complete(ctx, stored); err != nil {
		t.Fatal(err)
	}
	if err := c.Lease.Complete(ctx, stored); err != nil {
		t.Fatalf("second Complete by the same owner: %v, want nil", err)
	}
	ttl, err := rdb.PTTL(ctx, k.String()).Result()
	if err != nil {
		t.Fatal(err)
	}
	// Begin set lease + retention (the default 30s lease); Complete within
	// the lease leaves it.
	if ttl < retention-time.Minute || ttl > retention+30*time.Second {
		t.Errorf("TTL after complete = %s, want about %s + the 30s lease", ttl, retention)
	}
	for range 3 {
		r := begin(t, s, k, "api", "fp")
		if r.Outcome != idem.Completed || !bytes.Equal(r.Result, stored) {
			t.Fatalf("replay = %q, want %q", r.Result, stored)
		}
		var got idem.Response
		if err := got.UnmarshalBinary(r.Result); err != nil {
			t.Fatal(err)
		}
		if got.Status != 202 || !bytes.Equal(got.Body, result) || got.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("decoded replay = %+v, want %+v", got, resp)
		}
	}
}

func TestKeepExtendsAndCancelsOnLoss(t *testing.T) {
	t.Parallel()
	s, rdb := newStore(t, idem.Config{Lease: 300 * time.Millisecond})
	ctx := context.Background()
	k := newKey(t)
	c := begin(t, s, k, "charge", "fp")
	work, stop := c.Lease.Keep(ctx)
	defer stop()

	time.Sleep(time.Second) // more than three leases
	if err := context.Cause(work); err != nil {
		t.Fatalf("work context ended while the lease was kept: %v", err)
	}
	if _, err := s.Begin(ctx, k, "charge", "fp"); !errors.Is(err, idem.ErrInProgress) {
		t.Fatalf("Begin after 3 leases of heartbeat: %v, want ErrInProgress", err)
	}

	// Another owner takes the stage (as if our heartbeats had stalled).
	if err := rdb.HSet(ctx, k.String(), "charge:owner", "intruder").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-work.Done():
		if !errors.Is(context.Cause(work), idem.ErrLost) {
			t.Fatalf("cause = %v, want ErrLost", context.Cause(work))
		}
	case <-time.After(2 * time.Second):
		t.Fatal("work context not cancelled after the lease was lost")
	}
}

func TestKeepStopsQuietlyAfterComplete(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, idem.Config{Lease: 150 * time.Millisecond})
	ctx := context.Background()
	c := begin(t, s, newKey(t), "charge", "fp")
	work, stop := c.Lease.Keep(ctx)
	if err := c.Lease.Complete(ctx, []byte("done")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := context.Cause(work); err != nil {
		t.Fatalf("work context cancelled after a completed lease: %v", err)
	}
	stop()
	stop()
}

func TestKeepCancelsWhenRedisStopsAnswering(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	// The heartbeat at 200ms fails after its 150ms timeout, before the
	// deadline at 500ms.
	const lease = 600 * time.Millisecond
	s := idem.New(srv.Client(), idem.Config{Lease: lease, Timeout: 150 * time.Millisecond})
	c := begin(t, s, newKey(t), "charge", "fp")
	work, stop := c.Lease.Keep(context.Background())
	defer stop()
	srv.Freeze() // answers nothing
	select {
	case <-work.Done():
	case <-time.After(10 * lease):
		t.Fatal("work context still live after ten leases without a heartbeat")
	}
	cause := context.Cause(work)
	if !errors.Is(cause, idem.ErrLost) || !errors.Is(cause, idem.ErrUnavailable) {
		t.Fatalf("cause = %v, want ErrLost wrapping ErrUnavailable", cause)
	}
}

func TestKeepStopWaitsForTheHeartbeatInFlight(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	var extends atomic.Int32
	s := idem.New(srv.Client(), idem.Config{Lease: 3 * time.Second, Timeout: time.Second,
		Observe: func(e idem.Event) {
			if e.Op == idem.OpExtend {
				extends.Add(1)
			}
		}})
	c := begin(t, s, newKey(t), "charge", "fp")
	srv.Freeze()
	_, stop := c.Lease.Keep(context.Background())
	// The first heartbeat is due after 1s and then hangs on the frozen
	// Redis for its 1s timeout (the deadline, at 2.7s, comes later); stop
	// is called while it hangs.
	time.Sleep(1300 * time.Millisecond)
	stop()
	if n := extends.Load(); n != 1 {
		t.Fatalf("stop returned with %d heartbeats finished, want the one in flight (1)", n)
	}
	srv.Thaw()
	time.Sleep(1500 * time.Millisecond) // more than a heartbeat interval
	if n := extends.Load(); n != 1 {
		t.Fatalf("%d heartbeats after stop returned, want none", n-1)
	}
}

func TestUnavailableWithinTimeout(t *testing.T) {
	t.Parallel()
	for _, fault := range []struct {
		name   string
		inject func(*redistest.Server)
	}{
		{"stopped", (*redistest.Server).Stop},  // connection refused
		{"frozen", (*redistest.Server).Freeze}, // accepts nothing, answers nothing
	} {
		t.Run(fault.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.StartServer(t)
			const timeout = 200 * time.Millisecond
			s := idem.New(srv.Client(), idem.Config{Timeout: timeout, Lease: time.Minute})
			k := newKey(t)
			c, err := s.Begin(context.Background(), k, "api", "fp")
			if err != nil {
				t.Fatal(err)
			}
			fault.inject(srv)
			calls := map[string]func() error{
				"begin":    func() error { _, err := s.Begin(context.Background(), k, "api", "fp"); return err },
				"complete": func() error { return c.Lease.Complete(context.Background(), []byte("x")) },
				"extend":   func() error { return c.Lease.Extend(context.Background()) },
				"release":  func() error { return c.Lease.Release(context.Background()) },
			}
			for name, call := range calls {
				start := time.Now()
				err := call()
				took := time.Since(start)
				if !errors.Is(err, idem.ErrUnavailable) {
					t.Errorf("%s on a %s redis: %v, want ErrUnavailable", name, fault.name, err)
				}
				// Generous bound: the timeout plus scheduling noise. The point
				// is "bounded", not a latency figure.
				if took > timeout+2*time.Second {
					t.Errorf("%s on a %s redis took %s, want about %s", name, fault.name, took, timeout)
				}
			}
		})
	}
}

func TestObserveReportsOutcomes(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	s, _ := newStore(t, idem.Config{Observe: func(e idem.Event) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, string(e.Op)+":"+e.Outcome)
	}})
	ctx := context.Background()
	k := newKey(t)
	c := begin(t, s, k, "api", "fp")
	s.Begin(ctx, k, "api", "fp")
	c.Lease.Extend(ctx)
	c.Lease.Complete(ctx, []byte("r"))
	s.Begin(ctx, k, "api", "fp")
	s.Begin(ctx, k, "api", "other")
	c.Lease.Release(ctx)
	want := []string{"begin:acquired", "begin:in_progress", "extend:ok", "complete:ok", "begin:replayed", "begin:mismatch", "release:lost"}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("observed %v, want %v", got, want)
	}
}

// TestCompleteRaisesTheTTLNeverShortensIt: Complete raises the key's TTL to
// the retention when it is shorter and leaves a longer one alone (another
// stage's longer retention).
func TestCompleteRaisesTheTTLNeverShortensIt(t *testing.T) {
	t.Parallel()
	short, rdb := newStore(t, idem.Config{Retention: time.Hour})
	long := idem.New(rdb, idem.Config{Retention: 3 * time.Hour})
	ctx := context.Background()
	ttl := func(k idem.Key) time.Duration {
		t.Helper()
		d, err := rdb.PTTL(ctx, k.String()).Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	k := newKey(t)
	api := begin(t, short, k, "api", "fp")
	if err := rdb.PExpire(ctx, k.String(), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := api.Lease.Complete(ctx, []byte("r")); err != nil {
		t.Fatal(err)
	}
	if got := ttl(k); got < time.Hour-time.Minute || got > time.Hour {
		t.Errorf("TTL after Complete on a 1m TTL = %s, want raised to about 1h", got)
	}

	charge := begin(t, long, k, "charge", "fp")
	api2 := begin(t, short, k, "api", "fp") // replay: a read, TTL untouched
	if api2.Outcome != idem.Completed {
		t.Fatalf("api replay = %v, want completed", api2.Outcome)
	}
	if err := charge.Lease.Complete(ctx, []byte("c")); err != nil {
		t.Fatal(err)
	}
	k2 := newKey(t)
	a := begin(t, long, k2, "api", "fp")
	b := begin(t, short, k2, "charge", "fp")
	if err := b.Lease.Complete(ctx, []byte("c")); err != nil {
		t.Fatal(err)
	}
	if got := ttl(k2); got < 3*time.Hour-time.Minute {
		t.Errorf("TTL after a 1h Complete on a 3h key = %s, want about 3h (never shortened)", got)
	}
	if err := a.Lease.Complete(ctx, []byte("a")); err != nil {
		t.Fatal(err)
	}
	if got := ttl(k); got < 3*time.Hour-time.Minute {
		t.Errorf("TTL after a 3h Complete = %s, want about 3h", got)
	}
}

// TestBeginTTLCoversTheLease: Begin raises the key's TTL to lease +
// retention, so a Complete within the lease leaves the expiry as it is (its
// PEXPIRE GT writes nothing), and a Complete after the lease ran out (no
// takeover) still raises it to the retention.
func TestBeginTTLCoversTheLease(t *testing.T) {
	t.Parallel()
	const lease, retention = 300 * time.Millisecond, time.Hour
	s, rdb := newStore(t, idem.Config{Lease: lease, Retention: retention})
	ctx := context.Background()
	expireAt := func(k idem.Key) time.Time {
		t.Helper()
		d, err := rdb.PExpireTime(ctx, k.String()).Result()
		if err != nil {
			t.Fatal(err)
		}
		return time.UnixMilli(d.Milliseconds())
	}

	k := newKey(t)
	c := begin(t, s, k, "api", "fp")
	at := expireAt(k)
	if want := c.Lease.Expires().Add(retention); at.Before(want) {
		t.Errorf("expiry after Begin = %s, want at least the lease's end + retention, %s", at, want)
	}
	if err := c.Lease.Complete(ctx, []byte("r")); err != nil {
		t.Fatal(err)
	}
	if got := expireAt(k); !got.Equal(at) {
		t.Errorf("expiry after Complete within the lease = %s, want unchanged %s", got, at)
	}

	late := newKey(t)
	c = begin(t, s, late, "api", "fp")
	time.Sleep(2 * lease)
	before := expireAt(late)
	if err := c.Lease.Complete(ctx, []byte("r")); err != nil {
		t.Fatal(err)
	}
	if got := expireAt(late); !got.After(before) || time.Until(got) < retention-time.Minute {
		t.Errorf("expiry after a late Complete = %s (was %s), want raised to about now + %s", got, before, retention)
	}
}

// TestBeginReleasesTheClaimItTimedOutOn: Redis runs a Begin but its reply
// comes back after the Begin's timeout (a proxy holds replies back): the
// claim it made has no holder, and without the background release every
// retry would get ErrInProgress for the whole lease. With it, the next
// Begin acquires at once.
func TestBeginReleasesTheClaimItTimedOutOn(t *testing.T) {
	t.Parallel()
	for _, unbatched := range []bool{false, true} {
		opt := redistest.Options(t, redisDB)
		addr, slow := slowReplies(t, opt.Addr, 300*time.Millisecond)
		opt.Addr, opt.ContextTimeoutEnabled = addr, true
		rdb := redis.NewClient(opt)
		t.Cleanup(func() { rdb.Close() })
		s := idem.New(rdb, idem.Config{Timeout: 100 * time.Millisecond, Lease: time.Minute, Unbatched: unbatched})
		ctx := context.Background()
		k := newKey(t)
		begin(t, s, newKey(t), "api", "fp") // the scripts loaded
		slow.Store(true)
		if _, err := s.Begin(ctx, k, "api", "fp"); !errors.Is(err, idem.ErrUnavailable) {
			t.Fatalf("unbatched %v: Begin with a late reply: %v, want ErrUnavailable", unbatched, err)
		}
		slow.Store(false)
		var c idem.Claim
		var err error
		// The release is on its way. A Begin may also time out again while
		// the proxy still holds a late reply back on a loaded machine: that
		// is retried too; a claim never released ends in ErrInProgress.
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
			c, err = s.Begin(ctx, k, "api", "fp")
			if !errors.Is(err, idem.ErrInProgress) && !errors.Is(err, idem.ErrUnavailable) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("unbatched %v: Begin after the late reply: %v (the timed-out claim still held)", unbatched, err)
		}
		if c.Outcome != idem.Acquired || c.Attempt != 2 {
			t.Errorf("unbatched %v: claim %+v, want acquired, attempt 2 (the first Begin ran, then was released)", unbatched, c)
		}
	}
}

// slowReplies is a TCP proxy to addr that forwards requests at once and
// holds each read of replies back by delay while slow is set.
func slowReplies(t *testing.T, addr string, delay time.Duration) (string, *atomic.Bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	slow := new(atomic.Bool)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() {
				defer c.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := u.Read(buf)
					if n > 0 {
						if slow.Load() {
							time.Sleep(delay)
						}
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), slow
}
