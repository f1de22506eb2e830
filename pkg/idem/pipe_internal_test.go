package idem

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	testenv "github.com/oncepay/oncepay/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// gate holds the first script sent on its own (the batch in flight) until
// release is closed, and records the size of every pipeline of scripts sent
// (not the connection set-up's).
type gate struct {
	once     sync.Once
	entered  chan struct{}
	release  chan struct{}
	mu       sync.Mutex
	pipeline []int
}

func newGate() *gate { return &gate{entered: make(chan struct{}), release: make(chan struct{})} }

func (g *gate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "evalsha" || cmd.Name() == "eval" {
			first := false
			g.once.Do(func() { first = true })
			if first {
				close(g.entered)
				<-g.release
			}
		}
		return next(ctx, cmd)
	}
}

func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && (cmds[0].Name() == "evalsha" || cmds[0].Name() == "eval") {
			g.mu.Lock()
			g.pipeline = append(g.pipeline, len(cmds))
			g.mu.Unlock()
		}
		return next(ctx, cmds)
	}
}

func gatedStore(t *testing.T, cfg Config) (*Store, *gate) {
	t.Helper()
	opt := testenv.Options(t, 1)
	opt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("redis at %s: %v (start the harness: scripts/harness run -- go test ./...)", opt.Addr, err)
	}
	g := newGate()
	rdb.AddHook(g)
	return New(rdb, cfg), g
}

func (p *pipe) queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue)
}

func waitQueued(t *testing.T, p *pipe, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); p.queued() < n; {
		if time.Now().After(deadline) {
			t.Fatalf("queued calls = %d, want %d", p.queued(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestConcurrentCallsShareAPipeline(t *testing.T) {
	t.Parallel()
	s, g := gatedStore(t, Config{Lease: 10 * time.Second})
	prefix := testenv.Name(t, "pipe")
	key := func(i int) Key {
		k, err := NewKey("m", prefix+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	const n = 10
	errs := make(chan error, n+1)
	go func() { _, err := s.Begin(context.Background(), key(0), "api", "fp"); errs <- err }()
	<-g.entered // the first call is in flight, held by the gate
	for i := 1; i <= n; i++ {
		go func() {
			c, err := s.Begin(context.Background(), key(i), "api", "fp")
			if err == nil && c.Outcome != Acquired {
				err = errors.New("not acquired: " + c.Outcome.String())
			}
			errs <- err
		}()
	}
	waitQueued(t, s.pipe, n)
	close(g.release)
	for range n + 1 {
		if err := <-errs; err != nil {
			t.Errorf("Begin: %v", err)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if want := []int{n}; !slices.Equal(g.pipeline, want) {
		t.Errorf("pipelines sent = %v, want %v", g.pipeline, want)
	}
}

func TestQueuedCallHonoursItsContext(t *testing.T) {
	t.Parallel()
	s, g := gatedStore(t, Config{Lease: 10 * time.Second, Timeout: time.Second})
	k, err := NewKey("m", testenv.Name(t, "pipe"))
	if err != nil {
		t.Fatal(err)
	}
	leader := make(chan error, 1)
	go func() { _, err := s.Begin(context.Background(), k, "api", "fp"); leader <- err }()
	<-g.entered
	defer func() {
		close(g.release)
		if err := <-leader; err != nil {
			t.Errorf("first Begin: %v", err)
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.Begin(ctx, k, "api", "fp")
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("queued Begin returned after %v, want about its context's 50ms", took)
	}
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("queued Begin: err = %v, want ErrUnavailable wrapping context.DeadlineExceeded", err)
	}
}

// TestNoScriptLoadsThroughThePipe: after SCRIPT FLUSH, batched calls load
// the script with EVAL and go on.
func TestNoScriptLoadsThroughThePipe(t *testing.T) {
	opt := testenv.Options(t, 1)
	opt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		var nerr net.Error
		if errors.As(err, &nerr) {
			t.Fatalf("redis at %s: %v (start the harness)", opt.Addr, err)
		}
		t.Fatal(err)
	}
	s := New(rdb, Config{})
	if s.pipe == nil {
		t.Fatal("store on a *redis.Client does not batch")
	}
	k, err := NewKey("m", testenv.Name(t, "noscript"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Begin(ctx, k, "api", "fp")
	if err != nil || c.Outcome != Acquired {
		t.Fatalf("Begin after SCRIPT FLUSH = %v, %v; want acquired", c.Outcome, err)
	}
	if err := c.Lease.Complete(ctx, []byte("r")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
}

// TestQueuedCallEndsAtTheTimeout: a call whose context has no deadline,
// queued behind a batch that hangs, still returns at Config.Timeout.
func TestQueuedCallEndsAtTheTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond
	s, g := gatedStore(t, Config{Lease: 10 * time.Second, Timeout: timeout})
	k, err := NewKey("m", testenv.Name(t, "pipe"))
	if err != nil {
		t.Fatal(err)
	}
	leader := make(chan error, 1)
	go func() { _, err := s.Begin(context.Background(), k, "api", "fp"); leader <- err }()
	<-g.entered
	defer func() { close(g.release); <-leader }()

	start := time.Now()
	_, err = s.Begin(context.Background(), k, "api", "fp")
	if took := time.Since(start); took > 5*timeout {
		t.Errorf("queued Begin returned after %v, want about the %v timeout", took, timeout)
	}
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("queued Begin: err = %v, want ErrUnavailable wrapping context.DeadlineExceeded", err)
	}
}
