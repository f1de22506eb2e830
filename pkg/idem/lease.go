package idem

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Lease is the caller's ownership of one stage, returned by Begin with
// Outcome Acquired. Exactly one of Complete or Release should end it. Its
// methods are safe for concurrent use (Keep heartbeats while the work runs).
type Lease struct {
	store   *Store
	key     Key
	stage   string
	owner   string
	attempt int
	expires time.Time // Redis TIME of the lease end, as last known

	mu    sync.Mutex
	ended atomic.Bool
}

// Key returns the operation's key.
func (l *Lease) Key() Key { return l.key }

// Stage returns the stage name.
func (l *Lease) Stage() string { return l.stage }

// Owner returns the owner token (random, unique per claim).
func (l *Lease) Owner() string { return l.owner }

// Attempt returns the attempt number of this claim.
func (l *Lease) Attempt() int { return l.attempt }

// Expires returns the lease end as last set by Begin or Extend, in Redis time.
func (l *Lease) Expires() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expires
}

// Complete stores result and marks the stage COMPLETED, raising the key TTL
// to the retention. It returns ErrLost, writing nothing, when another owner
// has taken the stage over (or it was released or forgotten), and
// ErrUnavailable when Redis fails (the outcome is then unknown); ErrFull
// (also ErrUnavailable) when Redis is out of memory: nothing was written and
// the stage stays PENDING. Calling it again after success returns nil. One
// Redis round trip.
func (l *Lease) Complete(ctx context.Context, result []byte) error {
	err := l.run(ctx, OpComplete, l.store.complete, result, l.store.cfg.Retention.Milliseconds())
	if err == nil {
		l.ended.Store(true)
	}
	return err
}

// Release gives the stage back after a retryable failure, so the next Begin
// acquires at once. It returns ErrLost when the caller no longer owns the
// stage and ErrUnavailable when Redis fails. It only deletes fields, so it
// works while Redis is out of memory.
func (l *Lease) Release(ctx context.Context) error {
	err := l.run(ctx, OpRelease, l.store.release)
	if err == nil {
		l.ended.Store(true)
	}
	return err
}

// Extend moves the lease end to now (Redis TIME) + the store's lease. It
// returns ErrLost when the caller no longer owns the stage and
// ErrUnavailable when Redis fails (ErrFull when it is out of memory).
func (l *Lease) Extend(ctx context.Context) error {
	return l.run(ctx, OpExtend, l.store.extend, l.store.cfg.Lease.Milliseconds())
}

func (l *Lease) run(ctx context.Context, op Op, script *redis.Script, args ...any) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, l.store.cfg.Timeout)
	defer cancel()
	res, err := script.Run(ctx, l.store.rdb, []string{l.key.String()},
		append([]any{l.stage, l.owner}, args...)...).Result()
	switch {
	case err != nil:
		err = unavailable(string(op), l.key, err)
	case res == "LOST":
		err = fmt.Errorf("%s %s stage %s: %w", op, l.key, l.stage, ErrLost)
	case op == OpExtend:
		ms, ok := res.(int64)
		if !ok {
			err = unavailable(string(op), l.key, fmt.Errorf("unexpected reply %v", res))
			break
		}
		l.mu.Lock()
		l.expires = time.UnixMilli(ms)
		l.mu.Unlock()
	case res != "OK":
		err = unavailable(string(op), l.key, fmt.Errorf("unexpected reply %v", res))
	}
	l.store.observe(op, l.stage, resultOutcome(err), start, err)
	return err
}

// Keep heartbeats the lease while work runs: it calls Extend every third of
// the lease and returns a context derived from ctx that is cancelled, with
// context.Cause ErrLost, as soon as the lease is lost, or when Redis could not
// be reached for longer than a lease (ownership can no longer be proven).
// The work must watch that context and stop writing when it ends.
//
// Call stop, which waits for a heartbeat in flight to end, before Complete
// or Release; stop is idempotent. The heartbeat is a timer, not a
// goroutine: work that ends before the first heartbeat (a third of the
// lease) costs one timer and a context, nothing else.
func (l *Lease) Keep(ctx context.Context) (work context.Context, stop func()) {
	work, cancel := context.WithCancelCause(ctx)
	k := &keeper{lease: l, work: work, cancel: cancel, every: l.store.cfg.Lease / 3, lastOK: time.Now()}
	k.mu.Lock()
	k.timer = time.AfterFunc(k.every, k.beat)
	k.mu.Unlock()
	var once sync.Once
	return work, func() { once.Do(k.stop) }
}

// keeper is one Keep: a timer whose callback extends the lease and sets
// itself again.
type keeper struct {
	lease  *Lease
	work   context.Context
	cancel context.CancelCauseFunc
	every  time.Duration

	mu      sync.Mutex // held by a heartbeat while it runs, so stop can wait for it
	timer   *time.Timer
	stopped bool
	lastOK  time.Time // last successful Extend (or the start)
}

// beat is one heartbeat; it runs on the timer's goroutine.
func (k *keeper) beat() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped || k.work.Err() != nil {
		return
	}
	err := k.lease.Extend(k.work)
	switch {
	case err == nil:
		k.lastOK = time.Now()
	case k.lease.ended.Load(): // completed or released meanwhile
		return
	case errors.Is(err, ErrLost):
		k.cancel(err)
		return
	case time.Since(k.lastOK) >= k.lease.store.cfg.Lease:
		k.cancel(fmt.Errorf("%w: no heartbeat for %s: %w", ErrLost, time.Since(k.lastOK).Round(time.Millisecond), err))
		return
	}
	k.timer.Reset(k.every)
}

// stop ends the heartbeat: it waits for one in flight, then cancels work's
// resources (with no cause: the work simply ended).
func (k *keeper) stop() {
	k.mu.Lock()
	k.stopped = true
	k.timer.Stop()
	k.mu.Unlock()
	k.cancel(nil)
}
