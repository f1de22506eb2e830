package idem_test

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/redis/go-redis/v9"
)

// TestKeepStopsBeforeATakeoverWhenRedisIsBlackholed: the holder's
// connections to Redis stall (requests vanish, replies never come) right
// after its first successful heartbeat, while a second client reaches Redis
// directly and polls Begin. The holder's work context must end strictly
// before the send of the Begin that takes the stage over.
func TestKeepStopsBeforeATakeoverWhenRedisIsBlackholed(t *testing.T) {
	t.Parallel()
	const lease = time.Second
	hole := &blackhole{}
	opt := redistest.Options(t, redisDB)
	opt.ContextTimeoutEnabled = true
	opt.MaxRetries = -1
	opt.Dialer = hole.dial
	holderRDB := redis.NewClient(opt)
	t.Cleanup(func() { holderRDB.Close() })
	holder := idem.New(holderRDB, idem.Config{Lease: lease, Timeout: 300 * time.Millisecond,
		Observe: func(e idem.Event) {
			if e.Op == idem.OpExtend && e.Outcome == idem.OutcomeOK {
				hole.stall.Store(true)
			}
		}})
	other, _ := newStore(t, idem.Config{Lease: lease})
	ctx := context.Background()
	k := newKey(t)

	c := begin(t, holder, k, "charge", "fp")
	work, stop := c.Lease.Keep(ctx)
	defer stop()
	workEnded := make(chan time.Time, 1)
	go func() { <-work.Done(); workEnded <- time.Now() }()

	var acquiredSent time.Time
	for deadline := time.Now().Add(10 * lease); ; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second client never took the stage over")
		}
		sent := time.Now()
		c2, err := other.Begin(ctx, k, "charge", "fp")
		if errors.Is(err, idem.ErrInProgress) {
			continue
		}
		if err != nil {
			t.Fatalf("second client's Begin: %v", err)
		}
		if !c2.TakeOver {
			t.Fatalf("second client acquired without a takeover: %+v", c2)
		}
		acquiredSent = sent
		break
	}
	if !hole.stall.Load() {
		t.Fatal("the holder's connection was never blackholed (no heartbeat succeeded)")
	}
	select {
	case ended := <-workEnded:
		if !ended.Before(acquiredSent) {
			t.Fatalf("holder's work ended %s after the takeover Begin was sent: two owners worked at once",
				ended.Sub(acquiredSent))
		}
		t.Logf("holder's work ended %s before the takeover Begin was sent", acquiredSent.Sub(ended))
	default:
		t.Fatal("holder's work still running after the stage was taken over")
	}
	if cause := context.Cause(work); !errors.Is(cause, idem.ErrLost) {
		t.Fatalf("cause = %v, want ErrLost", cause)
	}
}

// blackhole dials real connections that stall once stall is set: writes are
// swallowed and reads wait for the read deadline (or Close), as on a network
// path that silently drops packets.
type blackhole struct{ stall atomic.Bool }

func (b *blackhole) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &holeConn{Conn: c, hole: b, closed: make(chan struct{})}, nil
}

type holeConn struct {
	net.Conn
	hole *blackhole

	mu           sync.Mutex
	readDeadline time.Time
	closeOnce    sync.Once
	closed       chan struct{}
}

func (c *holeConn) Write(p []byte) (int, error) {
	if c.hole.stall.Load() {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *holeConn) Read(p []byte) (int, error) {
	if !c.hole.stall.Load() {
		return c.Conn.Read(p)
	}
	c.mu.Lock()
	d := c.readDeadline
	c.mu.Unlock()
	var expired <-chan time.Time
	if !d.IsZero() {
		timer := time.NewTimer(time.Until(d))
		defer timer.Stop()
		expired = timer.C
	}
	select {
	case <-expired:
		return 0, os.ErrDeadlineExceeded
	case <-c.closed:
		return 0, net.ErrClosed
	}
}

func (c *holeConn) SetDeadline(t time.Time) error {
	c.setRead(t)
	return c.Conn.SetDeadline(t)
}

func (c *holeConn) SetReadDeadline(t time.Time) error {
	c.setRead(t)
	return c.Conn.SetReadDeadline(t)
}

func (c *holeConn) setRead(t time.Time) {
	c.mu.Lock()
	c.readDeadline = t
	c.mu.Unlock()
}

func (c *holeConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// The holder's deadline is the send time of Begin, then of each successful
// Extend, plus the lease minus the margin.
func TestDeadlineFollowsSendTimes(t *testing.T) {
	t.Parallel()
	const lease, margin = 2 * time.Second, 300 * time.Millisecond
	s, _ := newStore(t, idem.Config{Lease: lease, Margin: margin})
	ctx := context.Background()
	within := func(what string, got, from, to time.Time) {
		t.Helper()
		lo, hi := from.Add(lease-margin), to.Add(lease-margin)
		if got.Before(lo) || got.After(hi) {
			t.Errorf("%s: deadline %s after the call started, want between %s and %s",
				what, got.Sub(from), lo.Sub(from), hi.Sub(from))
		}
	}
	before := time.Now()
	c := begin(t, s, newKey(t), "charge", "fp")
	within("Begin", c.Lease.Deadline(), before, time.Now())

	time.Sleep(100 * time.Millisecond)
	before = time.Now()
	if err := c.Lease.Extend(ctx); err != nil {
		t.Fatal(err)
	}
	within("Extend", c.Lease.Deadline(), before, time.Now())
}
