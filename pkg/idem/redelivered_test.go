package idem_test

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/lua"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/redis/go-redis/v9"
)

// TestBeginResentAfterALostReplyIsAcquired: Redis runs a Begin, the
// connection breaks before its reply arrives, and go-redis sends the
// script again on a new connection (a command or a whole pipeline, up to
// MaxRetries times). The second run finds the claim the first one made
// for the same owner and must hand it back, attempt 1, not answer
// ErrInProgress: otherwise the caller waits a whole lease behind its own
// claim. Unbatched, batched with one call (Process) and batched with many
// (a pipeline).
func TestBeginResentAfterALostReplyIsAcquired(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		unbatched bool
		calls     int
	}{
		{"unbatched", true, 1},
		{"batched, one call", false, 1},
		{"batched, a pipeline", false, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			direct := redistest.Client(t, redisDB)
			loadScripts(t, direct) // so that the first EVALSHA runs rather than answering NOSCRIPT
			p := newReplyCutter(t, redistest.Options(t, redisDB).Addr)
			if tc.calls > 1 {
				// The lone first call's reply waits, so that the other
				// calls queue behind it and go out as one pipeline, whose
				// reply is then cut off.
				p.hold(func(req []byte) bool { return scripts(req) == 1 }, 200*time.Millisecond)
				p.cut(func(req []byte) bool { return scripts(req) >= 2 })
			} else {
				p.cut(func(req []byte) bool { return scripts(req) == 1 })
			}
			opt := redistest.Options(t, redisDB)
			opt.Addr, opt.ContextTimeoutEnabled = p.addr, true
			rdb := redis.NewClient(opt)
			t.Cleanup(func() { rdb.Close() })
			s := idem.New(rdb, idem.Config{Lease: time.Minute, Timeout: 5 * time.Second, Unbatched: tc.unbatched})

			keys := make([]idem.Key, tc.calls)
			for i := range keys {
				keys[i] = newKey(t)
			}
			claims := make([]idem.Claim, tc.calls)
			errs := make([]error, tc.calls)
			var wg sync.WaitGroup
			for i := range keys {
				wg.Go(func() { claims[i], errs[i] = s.Begin(context.Background(), keys[i], "api", "fp") })
			}
			wg.Wait()
			if !p.didCut() {
				t.Fatal("the proxy cut no reply off; the test proved nothing")
			}
			for i, k := range keys {
				c, err := claims[i], errs[i]
				if err != nil {
					t.Errorf("Begin %d of %d: %v, want acquired (its own claim, made by the run whose reply was lost)", i+1, tc.calls, err)
					continue
				}
				if c.Outcome != idem.Acquired || c.Attempt != 1 || c.TakeOver || c.Lease == nil {
					t.Errorf("Begin %d of %d: claim %+v, want acquired, attempt 1, no takeover", i+1, tc.calls, c)
					continue
				}
				f, err := direct.HMGet(context.Background(), k.String(), "api:owner", "api:lease", "api:attempt").Result()
				if err != nil {
					t.Fatal(err)
				}
				if f[0] != c.Lease.Owner() || f[1] != strconv.FormatInt(c.Lease.Expires().UnixMilli(), 10) || f[2] != "1" {
					t.Errorf("Begin %d: stage owner, lease, attempt = %v, want %s, %d, 1 (the claim's)",
						i+1, f, c.Lease.Owner(), c.Lease.Expires().UnixMilli())
				}
				if err := c.Lease.Complete(context.Background(), []byte("done")); err != nil {
					t.Errorf("Begin %d: Complete of the claim: %v", i+1, err)
				}
			}
		})
	}
}

// TestLeaseCallsResentAfterALostReply: Complete, Release and Extend, sent
// again by go-redis after their first reply was lost, answer what their
// first run answered; the owner is not told it lost a stage it still held
// (or released itself).
func TestLeaseCallsResentAfterALostReply(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		op   string
		call func(*idem.Lease, context.Context) error
		want map[string]string // the stage's fields afterwards
	}{
		{"complete", func(l *idem.Lease, ctx context.Context) error { return l.Complete(ctx, []byte("r")) },
			map[string]string{"api:state": "C", "api:result": "r", "api:attempt": "1"}},
		{"release", (*idem.Lease).Release,
			map[string]string{"api:state": "", "api:attempt": "1"}},
		{"extend", (*idem.Lease).Extend,
			map[string]string{"api:state": "P", "api:attempt": "1"}},
	} {
		for _, unbatched := range []bool{false, true} {
			t.Run(tc.op+"/unbatched="+strconv.FormatBool(unbatched), func(t *testing.T) {
				t.Parallel()
				direct := redistest.Client(t, redisDB)
				loadScripts(t, direct)
				p := newReplyCutter(t, redistest.Options(t, redisDB).Addr)
				opt := redistest.Options(t, redisDB)
				opt.Addr, opt.ContextTimeoutEnabled = p.addr, true
				rdb := redis.NewClient(opt)
				t.Cleanup(func() { rdb.Close() })
				s := idem.New(rdb, idem.Config{Lease: time.Minute, Timeout: 5 * time.Second, Unbatched: unbatched})
				ctx := context.Background()
				k := newKey(t)
				c := begin(t, s, k, "api", "fp")
				p.cut(func(req []byte) bool { return scripts(req) == 1 })
				if err := tc.call(c.Lease, ctx); err != nil {
					t.Fatalf("%s resent after its reply was lost: %v, want nil", tc.op, err)
				}
				if !p.didCut() {
					t.Fatal("the proxy cut no reply off; the test proved nothing")
				}
				got, err := direct.HGetAll(ctx, k.String()).Result()
				if err != nil {
					t.Fatal(err)
				}
				for f, want := range tc.want {
					if got[f] != want {
						t.Errorf("%s = %q, want %q (hash %v)", f, got[f], want, got)
					}
				}
			})
		}
	}
}

// loadScripts loads the boundary's scripts on rdb's Redis.
func loadScripts(t *testing.T, rdb *redis.Client) {
	t.Helper()
	for _, src := range []string{lua.Begin(), lua.Complete(), lua.Release(), lua.Extend()} {
		if err := rdb.ScriptLoad(context.Background(), src).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// scripts counts the script calls in one read of requests.
func scripts(req []byte) int {
	return bytes.Count(bytes.ToLower(req), []byte("evalsha"))
}

// replyCutter is a TCP proxy to a Redis that, once, cuts off the reply to
// the first request that a rule matches: it forwards that request, waits
// until Redis answers it (so the command ran), then closes the client's
// connection without passing the answer on, as a connection reset would.
// A hold rule, also once, delays the reply to its request instead.
type replyCutter struct {
	addr string

	mu       sync.Mutex
	cutRule  func([]byte) bool
	holdRule func([]byte) bool
	holdFor  time.Duration
	cutDone  bool
}

func newReplyCutter(t *testing.T, upstream string) *replyCutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &replyCutter{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			go p.serve(c, u)
		}
	}()
	return p
}

// cut arms the cut for the first request that match matches.
func (p *replyCutter) cut(match func([]byte) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutRule, p.cutDone = match, false
}

// hold delays the reply to the first request that match matches by d.
func (p *replyCutter) hold(match func([]byte) bool, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdRule, p.holdFor = match, d
}

// didCut reports whether a reply was cut off.
func (p *replyCutter) didCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cutDone
}

// serve relays one connection. A request read that a rule matches marks
// the next reply read of this connection (its reply: go-redis sends one
// command or pipeline per connection at a time) to be cut or held.
func (p *replyCutter) serve(c, u net.Conn) {
	defer c.Close()
	defer u.Close()
	type action struct {
		cut  bool
		hold time.Duration
	}
	next := make(chan action, 1)
	go func() {
		defer u.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				p.mu.Lock()
				var a *action
				switch {
				case p.cutRule != nil && p.cutRule(buf[:n]):
					p.cutRule, a = nil, &action{cut: true}
				case p.holdRule != nil && p.holdRule(buf[:n]):
					p.holdRule, a = nil, &action{hold: p.holdFor}
				}
				if a != nil {
					select {
					case next <- *a:
					default: // cannot happen: one request, one reply
					}
				}
				p.mu.Unlock()
				if _, err := u.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := u.Read(buf)
		if n > 0 {
			select {
			case a := <-next:
				if a.cut {
					p.mu.Lock()
					p.cutDone = true
					p.mu.Unlock()
					return // closes both connections, the reply unsent
				}
				time.Sleep(a.hold)
			default:
			}
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
