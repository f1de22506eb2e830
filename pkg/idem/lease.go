package idem

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Lease is the caller's ownership of one stage, returned by Begin with
// Outcome Acquired. Exactly one of Complete or Release should end it. Its
// methods are safe for concurrent use (Keep heartbeats while the work runs).
type Lease struct {
	store   *Store
	key     Key
	keyArg  any // key.String(), boxed once for the script calls
	stage   string
	owner   string
	attempt int
	expires time.Time // Redis TIME of the lease end, as last known
	// sent is this process's clock (monotonic) when the last successful
	// Begin or Extend was sent: Redis set the lease end no earlier than
	// sent + the lease, so the holder's deadline is measured from it.
	sent time.Time

	mu    sync.Mutex // guards expires and sent after Begin
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

// Deadline returns the local time by which the holder must have stopped
// working unless an Extend succeeds before: the send time of the last
// successful Begin or Extend plus the lease minus the store's margin
// (Config.Margin). Redis may hand the stage to another owner from that send
// time plus the lease on; the margin covers clock drift between this
// process and Redis TIME and the time the work needs to stop.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return holdDeadline(l.sent, l.store.cfg.Lease, l.store.cfg.Margin)
}

// holdDeadline is sent + lease - margin.
func holdDeadline(sent time.Time, lease, margin time.Duration) time.Time {
	return sent.Add(lease - margin)
}

// Complete stores result and marks the stage COMPLETED, raising the key TTL
// to the retention. It returns ErrLost, writing nothing, when another owner
// has taken the stage over (or it was released or forgotten), and
// ErrUnavailable when Redis fails (the outcome is then unknown); ErrFull
// (also ErrUnavailable) when Redis is out of memory: nothing was written and
// the stage stays PENDING. Calling it again after success returns nil. One
// Redis round trip.
func (l *Lease) Complete(ctx context.Context, result []byte) error {
	err := l.run(ctx, OpComplete, l.store.complete, result, l.store.retentionArg)
	if err == nil {
		l.ended.Store(true)
	}
	return err
}

// Release gives the stage back after a retryable failure, so the next Begin
// acquires at once. It returns ErrLost when the caller no longer owns the
// stage and ErrUnavailable when Redis fails; calling it again after success
// returns nil, as long as no one claimed the stage since. It only deletes
// fields, so it works while Redis is out of memory.
func (l *Lease) Release(ctx context.Context) error {
	err := l.run(ctx, OpRelease, l.store.release)
	if err == nil {
		l.ended.Store(true)
	}
	return err
}

// Extend moves the lease end to now (Redis TIME) + the store's lease and,
// on success, Deadline to the time Extend was sent + the lease - the
// margin. It returns ErrLost when the caller no longer owns the stage and
// ErrUnavailable when Redis fails (ErrFull when it is out of memory).
func (l *Lease) Extend(ctx context.Context) error {
	return l.run(ctx, OpExtend, l.store.extend, l.store.leaseArg)
}

func (l *Lease) run(ctx context.Context, op Op, sc script, args ...any) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, l.store.cfg.Timeout)
	defer cancel()
	a := append(evalArgs(sc, l.keyArg, 2+len(args)), l.stage, l.owner)
	res, err := l.store.eval(ctx, sc, append(a, args...), classLease)
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
		l.sent = start // at or before the send: the safe side
		l.mu.Unlock()
	case res != "OK":
		err = unavailable(string(op), l.key, fmt.Errorf("unexpected reply %v", res))
	}
	l.store.observe(op, l.stage, resultOutcome(err), start, err)
	return err
}

// Keep heartbeats the lease while work runs and returns a context derived
// from ctx that ends when the work must stop writing:
//
//   - at the holder's Deadline, with context.Cause matching ErrLost (and
//     ErrUnavailable when the last heartbeat failed for want of Redis): no
//     Extend since Begin or the last successful Extend was sent has been
//     confirmed in time, so ownership can no longer be proven. A timer
//     fires at the deadline, whether a heartbeat is in flight or not, so
//     the work stops before another owner can acquire the stage (given a
//     margin larger than the clock drift and the time to stop);
//   - as soon as a heartbeat finds the lease lost (cause ErrLost);
//   - when ctx ends.
//
// The heartbeat calls Extend a third of the lease after the send time of
// Begin or of the last successful Extend, and again half that interval
// after a failed one; each success moves the deadline to its own send time
// plus the lease minus the margin. The work must watch the context.
//
// Call stop, which waits for a heartbeat in flight to end (at most the
// store's Timeout), before Complete or Release; stop is idempotent. The
// heartbeat and the deadline are timers, not goroutines: work that ends
// before the first heartbeat costs two timers and a context, nothing else.
func (l *Lease) Keep(ctx context.Context) (work context.Context, stop func()) {
	work, cancel := context.WithCancelCause(ctx)
	k := &keeper{lease: l, work: work, cancel: cancel, every: l.store.cfg.Lease / 3}
	l.mu.Lock()
	sent := l.sent
	l.mu.Unlock()
	k.mu.Lock()
	k.deadline = time.AfterFunc(time.Until(l.Deadline()), k.expire)
	k.timer = time.AfterFunc(time.Until(sent.Add(k.every)), k.beat)
	k.mu.Unlock()
	var once sync.Once
	return work, func() { once.Do(k.stop) }
}

// keeper is one Keep: a heartbeat timer whose callback extends the lease
// and sets itself again, and a deadline timer that ends the work.
type keeper struct {
	lease  *Lease
	work   context.Context
	cancel context.CancelCauseFunc
	every  time.Duration

	mu       sync.Mutex // held by a heartbeat while it runs, so stop can wait for it
	timer    *time.Timer
	deadline *time.Timer // fires expire at the lease's Deadline; never waits for mu
	stopped  bool
	lastErr  atomic.Pointer[error] // the last failed heartbeat's error, for expire
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
	case k.work.Err() != nil, k.lease.ended.Load(): // deadline, ctx, or completed or released meanwhile
		return
	case err == nil:
		k.lastErr.Store(nil)
		k.deadline.Reset(time.Until(k.lease.Deadline()))
		k.lease.mu.Lock()
		next := k.lease.sent.Add(k.every)
		k.lease.mu.Unlock()
		k.timer.Reset(time.Until(next))
	case errors.Is(err, ErrLost):
		k.cancel(err)
	default:
		k.lastErr.Store(&err)
		k.timer.Reset(k.every / 2)
	}
}

// expire ends the work at the lease's deadline. It runs on the deadline
// timer's goroutine and takes no lock a heartbeat holds.
func (k *keeper) expire() {
	if k.lease.ended.Load() { // completed or released: nothing left to stop
		return
	}
	past := time.Since(k.lease.Deadline()).Round(time.Millisecond)
	if p := k.lastErr.Load(); p != nil {
		k.cancel(fmt.Errorf("%w: lease deadline passed %s ago without a renewal: %w", ErrLost, past, *p))
		return
	}
	k.cancel(fmt.Errorf("%w: lease deadline passed %s ago without a renewal", ErrLost, past))
}

// stop ends the heartbeat: it waits for one in flight, then cancels work's
// resources (with no cause: the work simply ended).
func (k *keeper) stop() {
	k.mu.Lock()
	k.stopped = true
	k.timer.Stop()
	k.deadline.Stop()
	k.mu.Unlock()
	k.cancel(nil)
}
