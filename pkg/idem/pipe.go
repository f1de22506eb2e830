package idem

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// maxBatch bounds the scripts sent in one pipeline.
const maxBatch = 128

// defaultMaxQueue is Config.MaxQueue's default: four batches wait at most.
const defaultMaxQueue = 4 * maxBatch

// pipeliner is what a batching Store needs of its client: *redis.Client,
// *redis.ClusterClient and *redis.Ring have it.
type pipeliner interface {
	redis.Scripter
	Process(ctx context.Context, cmd redis.Cmder) error
	Pipeline() redis.Pipeliner
}

// class says how soon a call is shed when the queue is long.
type class int

const (
	// classNew is new work (Begin) and the background release of a
	// failed Begin: refused once maxQueue calls wait.
	classNew class = iota
	// classLease ends or keeps work already begun (Complete, Release,
	// Extend): refused only once twice maxQueue calls wait.
	classLease
)

// pipe sends the scripts of concurrent callers together. A caller that
// finds no batch in flight sends its own script at once, in its own
// goroutine; scripts that arrive while a batch is in flight queue up and go
// out as the next batch, one pipeline (one write and one read on one
// connection) for up to maxBatch of them. At most one batch is in flight,
// so a lone caller pays no hand-off and a loaded Redis reads many scripts
// per system call.
//
// The queue does no work for callers that are gone and does not grow
// without bound when Redis stalls or falls behind: a call whose context
// ends while it waits is withdrawn and never sent, and a call that finds
// the queue full (limit) fails at once with ErrOverloaded. So the queue
// holds only live callers, at most a few batches of them, and when Redis
// is back it serves them, not a backlog of abandoned work.
type pipe struct {
	rdb      pipeliner
	timeout  time.Duration // bounds one batch
	maxQueue int

	mu    sync.Mutex
	busy  bool // a batch is being sent; queued calls wait for the next
	queue []*call
}

type call struct {
	ctx  context.Context // the caller's: its values (a trace span) go with the send
	cmd  *redis.Cmd
	done chan struct{} // closed when cmd has its reply or error
	sent bool          // taken into a batch (guarded by pipe.mu)
}

// notSentError is the error of a call that was never sent to Redis, so its
// script did not run: its context ended before the send. It unwraps to
// context.Cause of that context.
type notSentError struct{ cause error }

func (e *notSentError) Error() string { return "not sent: " + e.cause.Error() }
func (e *notSentError) Unwrap() error { return e.cause }

// limit is how many queued calls make the pipe refuse a call of class cl.
func (p *pipe) limit(cl class) int {
	if cl == classLease {
		return 2 * p.maxQueue
	}
	return p.maxQueue
}

// do sends cmd in the next batch and waits for its reply or for ctx to
// end. It returns ErrOverloaded at once, sending nothing, when limit(cl)
// calls are queued, and a *notSentError when ctx ends before the call is
// sent (the call is withdrawn). When ctx ends after the send, it returns
// ctx's error and the script may still run later: its outcome is unknown,
// as with any timed-out call. cmd must not be read after do returns an
// error of ctx.
func (p *pipe) do(ctx context.Context, cmd *redis.Cmd, cl class) (any, error) {
	if ctx.Err() != nil {
		return nil, &notSentError{context.Cause(ctx)}
	}
	c := &call{ctx: ctx, cmd: cmd, done: make(chan struct{})}
	p.mu.Lock()
	if len(p.queue) >= p.limit(cl) {
		p.mu.Unlock()
		return nil, ErrOverloaded
	}
	p.queue = append(p.queue, c)
	lead := !p.busy
	p.busy = true
	p.mu.Unlock()
	if lead {
		// This caller sends the queue (its own call first) now; what
		// queues meanwhile is sent by a goroutine that lives while calls
		// keep arriving, so that no caller waits for other callers' batches.
		if p.flush() {
			go p.drain()
		}
	}
	select {
	case <-c.done:
		return cmd.Result()
	case <-ctx.Done():
	}
	if p.withdraw(c) {
		return nil, &notSentError{context.Cause(ctx)}
	}
	return nil, context.Cause(ctx)
}

// withdraw takes c out of the queue unless it was sent, and reports
// whether it was never sent.
func (p *pipe) withdraw(c *call) (unsent bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.sent {
		return false
	}
	if i := slices.Index(p.queue, c); i >= 0 {
		p.queue = slices.Delete(p.queue, i, i+1)
	}
	return true
}

// flush sends one batch of up to maxBatch queued calls, dropping those
// whose context has ended (their callers return its error), and reports
// whether calls are queued for the next; when none are, the pipe is idle
// again.
func (p *pipe) flush() (more bool) {
	p.mu.Lock()
	batch := make([]*call, 0, min(len(p.queue), maxBatch))
	i := 0
	for ; i < len(p.queue) && len(batch) < maxBatch; i++ {
		c := p.queue[i]
		p.queue[i] = nil
		if c.ctx.Err() != nil {
			continue // never sent: its caller returns ctx's error
		}
		c.sent = true
		batch = append(batch, c)
	}
	p.queue = p.queue[i:]
	if len(p.queue) == 0 {
		p.queue = nil
	}
	p.mu.Unlock()

	if len(batch) > 0 {
		p.send(batch)
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) == 0 {
		p.busy = false
		return false
	}
	return true
}

func (p *pipe) drain() {
	for p.flush() {
	}
}

// send sends batch on a context that carries the first caller's values (so
// a tracing hook parents the command or pipeline to that caller's span) but
// not its cancellation: the batch is bounded by p.timeout alone, since one
// caller giving up must not cut off the others' scripts.
func (p *pipe) send(batch []*call) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(batch[0].ctx), p.timeout)
	defer cancel()
	if len(batch) == 1 {
		_ = p.rdb.Process(ctx, batch[0].cmd)
	} else {
		pl := p.rdb.Pipeline()
		for _, c := range batch {
			_ = pl.Process(ctx, c.cmd)
		}
		_, _ = pl.Exec(ctx) // every command carries its own reply or error
	}
	for _, c := range batch {
		close(c.done)
	}
}

// script is one boundary script: its SHA1 for EVALSHA and its source for
// the EVAL that loads it when Redis answers NOSCRIPT, each also held as an
// any so that building a command line does not box them again.
type script struct {
	*redis.Script
	src             string
	hashArg, srcArg any
}

func newScript(src string) script {
	sc := script{Script: redis.NewScript(src), src: src}
	sc.hashArg, sc.srcArg = sc.Hash(), src
	return sc
}

// evalArgs returns the command line EVALSHA <sc> 1 <key>, with room for n
// script arguments to be appended. key is the key's string, boxed.
func evalArgs(sc script, key any, n int) []any {
	a := make([]any, 4, 4+n)
	a[0], a[1], a[2], a[3] = "evalsha", sc.hashArg, 1, key
	return a
}

// eval runs the command line a (from evalArgs, arguments appended) through
// the store's pipe as a call of class cl, or on its own when the store does
// not batch, with EVALSHA and, on NOSCRIPT, EVAL (what redis.Script.Run
// does). A call whose ctx has ended is not sent (a *notSentError).
func (s *Store) eval(ctx context.Context, sc script, a []any, cl class) (any, error) {
	if ctx.Err() != nil {
		return nil, &notSentError{context.Cause(ctx)}
	}
	if s.pipe == nil {
		key, _ := a[3].(string)
		return sc.Run(ctx, s.rdb, []string{key}, a[4:]...).Result()
	}
	res, err := s.pipe.do(ctx, redis.NewCmd(ctx, a...), cl)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		b := slices.Clone(a)
		b[0], b[1] = "eval", sc.srcArg
		return s.pipe.do(ctx, redis.NewCmd(ctx, b...), cl)
	}
	return res, err
}
