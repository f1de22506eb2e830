package idem_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/redis/go-redis/v9"
)

// What the boundary guarantees across a Sentinel failover, at the library
// level. Replication is asynchronous: a Complete that the primary
// acknowledged and did not yet send to the replica is gone once the
// replica is promoted, and the stage is PENDING again (or absent, if the
// Begin was lost too). After the lease runs out a second owner acquires
// it: the boundary alone does not keep a stage from running twice across
// a failover; the services' Postgres backstops do (docs/scaling.md).

// TestSentinelFailoverUnderLoad kills (SIGKILL) the primary while 16
// goroutines run Begin and Complete on fresh keys through the failover
// client, and measures how long writes were refused. Every acknowledged
// Complete must afterwards replay its own result, or be absent (lost with
// the primary): nothing else, and no answer mixes two owners.
func TestSentinelFailoverUnderLoad(t *testing.T) {
	sen := redistest.StartSentinel(t)
	rdb := sen.Client()
	s := idem.New(rdb, idem.Config{Lease: 10 * time.Second, Timeout: 500 * time.Millisecond})
	ctx := context.Background()

	type done struct {
		k  idem.Key
		at time.Time
	}
	var (
		stop               atomic.Bool
		mu                 sync.Mutex
		acked              []done
		unknown            []idem.Key // Complete failed: outcome unknown
		beginErr, compErr  int
		killedAt, firstAck time.Time
		wg                 sync.WaitGroup
	)
	for range 16 {
		wg.Go(func() {
			for !stop.Load() {
				k := newKey(t)
				began := time.Now()
				c, err := s.Begin(ctx, k, "api", "fp")
				if err != nil {
					mu.Lock()
					beginErr++
					mu.Unlock()
					time.Sleep(10 * time.Millisecond)
					continue
				}
				err = c.Lease.Complete(ctx, []byte(k.String()))
				now := time.Now()
				mu.Lock()
				if err != nil {
					compErr++
					unknown = append(unknown, k)
				} else {
					acked = append(acked, done{k, now})
					// Only an operation begun after the kill proves a new primary.
					if !killedAt.IsZero() && firstAck.IsZero() && began.After(killedAt) {
						firstAck = now
					}
				}
				mu.Unlock()
			}
		})
	}

	time.Sleep(time.Second)
	old, err := sen.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old.Kill()
	mu.Lock()
	before := len(acked) // acknowledged before the kill returned
	killedAt = time.Now()
	mu.Unlock()
	promoted := sen.WaitPrimary(old, 60*time.Second)
	promotedAt := time.Now()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		resumed := !firstAck.IsZero() && time.Since(firstAck) > time.Second
		mu.Unlock()
		if resumed || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if firstAck.IsZero() {
		t.Fatalf("no Complete succeeded within 30s after %s was promoted", promoted.Addr())
	}

	// Check every acknowledged completion with a second owner's Begin
	// (retried while the client still dials the old primary).
	secondBegin := func(k idem.Key) (c idem.Claim, err error) {
		for range 100 {
			if c, err = s.Begin(ctx, k, "api", "fp"); !errors.Is(err, idem.ErrUnavailable) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		return c, err
	}
	lost, lostLastSecond := 0, 0
	for _, d := range acked {
		c, err := secondBegin(d.k)
		switch {
		case err == nil && c.Outcome == idem.Completed && string(c.Result) == d.k.String():
		case err == nil && c.Outcome == idem.Acquired, errors.Is(err, idem.ErrInProgress):
			lost++
			if d.at.After(killedAt.Add(-time.Second)) {
				lostLastSecond++
			}
		default:
			t.Errorf("acknowledged %s: second Begin = %+v, %v; want its own result replayed, or the stage lost", d.k, c, err)
		}
	}
	took := 0
	for _, k := range unknown {
		c, err := secondBegin(k)
		if err == nil && c.Outcome == idem.Completed {
			took++
		}
	}
	t.Logf("failover %s -> %s: sentinels promoted after %s, first Complete acknowledged %s after the kill",
		old.Addr(), promoted.Addr(), promotedAt.Sub(killedAt).Round(time.Millisecond), firstAck.Sub(killedAt).Round(time.Millisecond))
	t.Logf("completions acknowledged: %d before the kill, %d in all; errors seen: Begin %d, Complete %d (%d of those took effect)",
		before, len(acked), beginErr, compErr, took)
	t.Logf("acknowledged completions lost with the old primary: %d (%d of them in its last second)", lost, lostLastSecond)
}

// TestSentinelFailoverCanLoseAnAcknowledgedComplete makes the loss certain:
// the replica is frozen and cut off before the first owner's Complete, the
// primary is killed after it. The promoted replica holds the stage PENDING
// under the first owner; once that lease has run out a second owner
// acquires the completed stage (takeover, attempt 2), and the first owner
// holds the stage. WAIT 1 after the Complete would have told the first owner
// that no replica had it.
func TestSentinelFailoverCanLoseAnAcknowledgedComplete(t *testing.T) {
	sen := redistest.StartSentinel(t)
	ctx := context.Background()
	rdb := sen.Client()
	conn := rdb.Conn() // one connection, so WAIT covers this client's writes
	t.Cleanup(func() { _ = conn.Close() })
	const lease = 500 * time.Millisecond
	first := idem.New(conn, idem.Config{Lease: lease})
	k := newKey(t)

	c := begin(t, first, k, "charge", "fp")
	if n, err := conn.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 after Begin = %d, %v; want the PENDING stage on the replica", n, err)
	}
	primary, err := sen.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	replica, err := sen.Replica(ctx)
	if err != nil {
		t.Fatal(err)
	}
	replica.Freeze()
	if err := primary.Client().ClientKillByFilter(ctx, "TYPE", "replica").Err(); err != nil {
		replica.Thaw()
		t.Fatalf("CLIENT KILL TYPE replica: %v", err)
	}
	if err := c.Lease.Complete(ctx, []byte("first")); err != nil {
		replica.Thaw()
		t.Fatalf("Complete on the primary: %v", err)
	}
	n, err := conn.Wait(ctx, 1, 100*time.Millisecond).Result()
	primary.Kill()
	replica.Thaw()
	if err != nil || n != 0 {
		t.Fatalf("WAIT 1 100 after the Complete = %d, %v; want 0 replicas (the replica was cut off)", n, err)
	}
	if got := sen.WaitPrimary(primary, 60*time.Second); got != replica {
		t.Fatalf("promoted %s, want the replica %s", got.Addr(), replica.Addr())
	}

	second := idem.New(rdb, idem.Config{Lease: lease})
	var claim idem.Claim
	waitUntil(t, 30*time.Second, func() error {
		claim, err = second.Begin(ctx, k, "charge", "fp")
		return err
	})
	if claim.Outcome != idem.Acquired || !claim.TakeOver || claim.Attempt != 2 {
		t.Fatalf("second owner's Begin after the failover = %+v; want a takeover, attempt 2, of the stage the first owner completed", claim)
	}
	// The first owner's connection died with the old primary; the record
	// shows who is fenced: the second owner holds the stage.
	if got, err := rdb.HGet(ctx, k.String(), "charge:owner").Result(); err != nil || got != claim.Lease.Owner() {
		t.Fatalf("charge:owner after the takeover = %q, %v; want the second owner %q (the first was %q)", got, err, claim.Lease.Owner(), c.Lease.Owner())
	}
}

// waitUntil retries f every 50ms until it returns nil or d passes.
func waitUntil(t *testing.T, d time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %v", d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// BenchmarkCompleteWait is Begin and Complete on the Sentinel primary,
// alone and followed by WAIT 1 100 (the replica has the completion before
// the caller goes on): what synchronous replication of each completion
// would cost. The two alternate within each iteration, so that both see the
// same machine; it reports each one's mean (ns/plain, ns/waited).
func BenchmarkCompleteWait(b *testing.B) {
	sen := redistest.StartSentinel(b)
	rdb := sen.Client()
	ctx := context.Background()
	conn := rdb.Conn()
	defer conn.Close()
	s := idem.New(conn, idem.Config{})
	m := redistest.Name(b, "m")
	op := func(i int, wait bool) time.Duration {
		start := time.Now()
		k, _ := idem.NewKey(m, fmt.Sprintf("%d-%t", i, wait))
		c, err := s.Begin(ctx, k, "api", "fp")
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Lease.Complete(ctx, []byte("result")); err != nil {
			b.Fatal(err)
		}
		if wait {
			if n, err := conn.Wait(ctx, 1, 100*time.Millisecond).Result(); err != nil || n != 1 {
				b.Fatalf("WAIT 1 100 = %d, %v", n, err)
			}
		}
		return time.Since(start)
	}
	var plain, waited time.Duration
	i := 0
	for b.Loop() {
		i++
		plain += op(i, false)
		waited += op(i, true)
	}
	b.ReportMetric(float64(plain.Nanoseconds())/float64(i), "ns/plain")
	b.ReportMetric(float64(waited.Nanoseconds())/float64(i), "ns/waited")
}

var _ redis.Scripter = (*redis.Conn)(nil)
