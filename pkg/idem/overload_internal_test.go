package idem

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncepay/oncepay/lua"
	"github.com/redis/go-redis/v9"
)

// fakeRedis is a Redis of fixed capacity for pure unit tests of the pipe:
// one server that runs rate scripts per second, one batch at a time in the
// order they were written, and that can be stalled (as by SIGSTOP). Like a
// real Redis it runs every script it was sent, also after the client gave
// up waiting for the reply. It answers Begin with ACQUIRED and any other
// script with "OK". It implements pipeliner; its other methods are nil.
type fakeRedis struct {
	redis.Scripter // unused by the pipe: nil
	beginSHA       string
	perScript      time.Duration

	mu     sync.Mutex
	resume time.Time // the server serves nothing before it

	work   chan *fakeBatch // written, not yet run: the socket buffers
	ran    atomic.Int64    // scripts run
	begins atomic.Int64    // Begin scripts sent
	others atomic.Int64    // other scripts sent
}

type fakeBatch struct {
	n        int
	finished chan struct{}
}

func newFakeRedis(t *testing.T, rate int) *fakeRedis {
	t.Helper()
	f := &fakeRedis{
		beginSHA:  newScript(lua.Begin()).Hash(),
		perScript: time.Second / time.Duration(rate),
		work:      make(chan *fakeBatch, 1<<20),
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go f.serve(stop, done)
	t.Cleanup(func() { close(stop); <-done })
	return f
}

// stall stops the server for d from now.
func (f *fakeRedis) stall(d time.Duration) {
	f.mu.Lock()
	f.resume = time.Now().Add(d)
	f.mu.Unlock()
}

func (f *fakeRedis) serve(stop, done chan struct{}) {
	defer close(done)
	var busyUntil time.Time
	for {
		var b *fakeBatch
		select {
		case <-stop:
			return
		case b = <-f.work:
		}
		f.mu.Lock()
		resume := f.resume
		f.mu.Unlock()
		now := time.Now()
		busyUntil = later(later(busyUntil, now), resume).Add(time.Duration(b.n) * f.perScript)
		select {
		case <-stop:
			return
		case <-time.After(time.Until(busyUntil)):
		}
		f.ran.Add(int64(b.n))
		close(b.finished)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// run writes cmds as one batch and waits for their replies or for ctx.
func (f *fakeRedis) run(ctx context.Context, cmds []redis.Cmder) error {
	b := &fakeBatch{n: len(cmds), finished: make(chan struct{})}
	for _, c := range cmds {
		if f.isBegin(c) {
			f.begins.Add(1)
		} else {
			f.others.Add(1)
		}
	}
	f.work <- b
	select {
	case <-b.finished:
		for _, c := range cmds {
			c.(*redis.Cmd).SetVal(f.reply(c))
		}
		return nil
	case <-ctx.Done():
		for _, c := range cmds {
			c.SetErr(ctx.Err())
		}
		return ctx.Err()
	}
}

func (f *fakeRedis) isBegin(c redis.Cmder) bool {
	a := c.Args()
	return len(a) > 1 && a[1] == f.beginSHA
}

func (f *fakeRedis) reply(c redis.Cmder) any {
	if f.isBegin(c) {
		return []any{"ACQUIRED", int64(1), int64(0), time.Now().Add(time.Minute).UnixMilli()}
	}
	return "OK"
}

func (f *fakeRedis) Process(ctx context.Context, cmd redis.Cmder) error {
	return f.run(ctx, []redis.Cmder{cmd})
}

func (f *fakeRedis) Pipeline() redis.Pipeliner { return &fakePipeline{f: f} }

// fakePipeline collects commands for one fakeRedis.run; the pipe uses only
// Process and Exec.
type fakePipeline struct {
	redis.Pipeliner // nil
	f               *fakeRedis
	cmds            []redis.Cmder
}

func (p *fakePipeline) Process(_ context.Context, cmd redis.Cmder) error {
	p.cmds = append(p.cmds, cmd)
	return nil
}

func (p *fakePipeline) Exec(ctx context.Context) ([]redis.Cmder, error) {
	return p.cmds, p.f.run(ctx, p.cmds)
}

// TestPipeRecoversFromAStall offers 1,000 Begin/s to a Redis that serves
// 1,280 scripts/s (80 % load), each caller giving up after the store's
// 500ms timeout (the services' default), and stalls Redis for one second. A pipe that sends calls whose
// callers are gone, and queues a release for every Begin that timed out,
// spends its capacity on dead work after the stall and never catches up (a
// metastable failure); the pipe must instead drop dead calls, shed what
// its bounded queue cannot hold, and be back to full goodput soon after
// the stall ends. Timing is measured in 100ms buckets and the bounds are
// loose (half the offered rate), so that a loaded machine does not fail it.
func TestPipeRecoversFromAStall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about 8s")
	}
	const (
		capacity = 1280 // scripts/s
		load     = 1000 // Begin/s
		bucket   = 100 * time.Millisecond
		stallAt  = time.Second
		stallFor = time.Second
		loadFor  = 5 * time.Second        // so 3s of load after the stall's end
		timeout  = 500 * time.Millisecond // IDEM_TIMEOUT's default
	)
	f := newFakeRedis(t, capacity)
	s := New(f, Config{Lease: time.Minute, Timeout: timeout})
	if s.pipe == nil {
		t.Fatal("store on the fake Redis does not batch")
	}
	maxQueue := s.pipe.limit(classLease)

	nb := int(loadFor/bucket) + 1
	var (
		mu       sync.Mutex
		acquired = make([]int, nb) // by the bucket the Begin returned in
		failed   = make([]int, nb)
		queued   = make([]int, nb) // the most seen in the bucket
		offered  = make([]int, nb)
	)
	start := time.Now()
	at := func() int { return min(int(time.Since(start)/bucket), nb-1) }

	sampled := make(chan struct{})
	stopSampling := make(chan struct{})
	go func() { // sample the queue
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
			q, i := s.pipe.queued(), at()
			mu.Lock()
			queued[i] = max(queued[i], q)
			mu.Unlock()
		}
	}()

	var callers sync.WaitGroup
	stalled := false
	for n := 0; ; {
		elapsed := time.Since(start)
		if elapsed >= loadFor {
			break
		}
		if !stalled && elapsed >= stallAt {
			f.stall(stallFor)
			stalled = true
		}
		for due := int(elapsed.Seconds() * load); n < due; n++ {
			k, err := NewKey("m", "k"+strconv.Itoa(n))
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			offered[at()]++
			mu.Unlock()
			callers.Add(1)
			go func() {
				defer callers.Done()
				c, err := s.Begin(context.Background(), k, "api", "fp")
				i := at()
				mu.Lock()
				defer mu.Unlock()
				if err == nil && c.Outcome == Acquired {
					acquired[i]++
				} else {
					failed[i]++
				}
			}()
		}
		time.Sleep(2 * time.Millisecond)
	}
	callers.Wait()
	returned := time.Since(start)
	// Every caller has returned: what is still queued is background
	// releases, each bounded by the store's timeout.
	var left int
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if left = s.pipe.queued(); left == 0 || time.Now().After(deadline) {
			break
		}
	}
	close(stopSampling)
	<-sampled

	mu.Lock()
	defer mu.Unlock()
	var b strings.Builder
	for i := range nb {
		fmt.Fprintf(&b, "%4.1fs offered %3d acquired %3d failed %3d queued %4d\n",
			(time.Duration(i) * bucket).Seconds(), offered[i], acquired[i], failed[i], queued[i])
	}
	sum := func(s []int, from, to time.Duration) (n int) {
		for _, v := range s[from/bucket : to/bucket] {
			n += v
		}
		return n
	}
	t.Logf("per %v (stall from %v for %v; callers all returned at %v; queued 2s later: %d; Begins offered %d, sent %d, acquired %d; scripts run %d):\n%s",
		bucket, stallAt, stallFor, returned.Round(time.Millisecond), left,
		sum(offered, 0, loadFor+bucket), f.begins.Load(), sum(acquired, 0, loadFor+bucket), f.ran.Load(), b.String())

	end := stallAt + stallFor
	if got, want := sum(acquired, end+time.Second, loadFor), sum(offered, end, loadFor-time.Second)/2; got < want {
		t.Errorf("acquired from 1s after the stall's end to the end of the load = %d, want at least %d (half of what was offered)", got, want)
	}
	if got, off := sum(acquired, 200*time.Millisecond, stallAt), sum(offered, 200*time.Millisecond, stallAt); got < off/2 {
		t.Errorf("before the stall: acquired %d of %d offered; the machine is too slow for this test's load", got, off)
	}
	if most := slices.Max(queued); most > maxQueue {
		t.Errorf("queue held up to %d calls, want at most %d", most, maxQueue)
	}
	if left != 0 {
		t.Errorf("queued 2s after every caller returned = %d, want 0", left)
	}
}

// TestPipeShedsAndSendsNoDeadCalls: while Redis stalls, a call whose
// context ends in the queue is never sent and queues no release; a Begin
// that finds the queue full fails at once with ErrOverloaded (also
// ErrUnavailable, outcome shed), sending nothing; the one Begin that was
// sent and timed out is released once Redis is back.
func TestPipeShedsAndSendsNoDeadCalls(t *testing.T) {
	t.Parallel()
	f := newFakeRedis(t, 100000)
	var (
		mu       sync.Mutex
		outcomes []string
	)
	s := New(f, Config{Lease: time.Minute, Timeout: 300 * time.Millisecond, MaxQueue: 2, Observe: func(e Event) {
		mu.Lock()
		outcomes = append(outcomes, e.Outcome)
		mu.Unlock()
	}})
	key := func(i int) Key {
		t.Helper()
		k, err := NewKey("m", "k"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	f.stall(time.Second)
	errs := make(chan error, 3)
	for i := range 3 { // one in flight, two queued that give up first
		ctx := context.Background()
		if i > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 150*time.Millisecond)
			t.Cleanup(cancel)
		}
		go func() { _, err := s.Begin(ctx, key(i), "api", "fp"); errs <- err }()
		if i == 0 {
			waitFor(t, "the first Begin sent", func() bool { return f.begins.Load() == 1 })
		}
	}
	waitQueued(t, s.pipe, 2)

	start := time.Now()
	_, err := s.Begin(context.Background(), key(3), "api", "fp")
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("Begin on a full queue returned after %v, want at once", took)
	}
	if !errors.Is(err, ErrOverloaded) || !errors.Is(err, ErrUnavailable) {
		t.Errorf("Begin on a full queue: err = %v, want ErrOverloaded and ErrUnavailable", err)
	}
	for range 3 {
		if err := <-errs; !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Begin during the stall: err = %v, want ErrUnavailable wrapping context.DeadlineExceeded", err)
		}
	}
	if got := s.pipe.queued(); got > 1 {
		t.Errorf("queued after the callers returned = %d, want at most the one release", got)
	}
	// After the stall: the one Begin sent is released, nothing else is sent.
	waitFor(t, "the release of the Begin that was sent", func() bool { return f.others.Load() == 1 })
	time.Sleep(100 * time.Millisecond)
	if got, want := [2]int64{f.begins.Load(), f.others.Load()}, [2]int64{1, 1}; got != want {
		t.Errorf("scripts sent (Begin, other) = %v, want %v", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(outcomes)
	if want := []string{OutcomeShed, OutcomeUnavailable, OutcomeUnavailable, OutcomeUnavailable}; !slices.Equal(outcomes, want) {
		t.Errorf("outcomes observed = %v, want %v", outcomes, want)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestMayHaveRun(t *testing.T) {
	t.Parallel()
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	read := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"timeout after the send", context.DeadlineExceeded, true},
		{"connection lost", io.EOF, true},
		{"connection reset", read, true},
		{"error reply", redis.ErrNoScript, false},
		{"not sent", &notSentError{context.DeadlineExceeded}, false},
		{"queue full", ErrOverloaded, false},
		{"dial", fmt.Errorf("wrapped: %w", dial), false},
		{"pool timeout", redis.ErrPoolTimeout, false},
		{"client closed", redis.ErrClosed, false},
	} {
		if got := mayHaveRun(tc.err); got != tc.want {
			t.Errorf("mayHaveRun(%s: %v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
