package idem

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Backoff bounds Retry. Zero fields take the documented defaults.
type Backoff struct {
	// Limit is the time after which Retry gives up, counted from its
	// start; it does not start another call past it. Zero means one call,
	// no retry.
	Limit time.Duration
	// Initial is the first pause. Default 50ms.
	Initial time.Duration
	// Max is the longest pause; each pause doubles up to it. Default 1s.
	Max time.Duration
}

// Retry calls op until it returns anything but an ErrUnavailable error,
// and returns that: nil, ErrLost or any other error ends it at once, since
// only "Redis did not answer" (or "Redis is full", ErrFull, which matches
// ErrUnavailable) can change by waiting. Between calls it
// pauses for a random half to all of the current pause, which starts at
// b.Initial and doubles up to b.Max. The last call starts when b.Limit has
// passed since Retry began, if not before; when that call fails too, or
// ctx ends, Retry gives up and returns op's last error, which still
// matches ErrUnavailable (and, when ctx ended, context.Cause(ctx) as
// well). Each call of op gets ctx; op bounds itself (a Lease method does,
// with the Store's Timeout).
//
// It is meant for ending a lease after Redis failed for a moment (a
// restart, a failover, LOADING after a restart): Complete and Release may
// be repeated. Complete or Release repeated by the same owner after a
// success is nil again, also when the earlier call reached Redis but
// reported ErrUnavailable (the answer was lost). Neither writes anything
// once another owner has claimed the stage (ErrLost).
//
// Retry runs in the caller's goroutine and is safe for concurrent use.
func Retry(ctx context.Context, b Backoff, op func(context.Context) error) error {
	if b.Initial <= 0 {
		b.Initial = 50 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = time.Second
	}
	deadline := time.Now().Add(b.Limit)
	pause := b.Initial
	for {
		err := op(ctx)
		if !errors.Is(err, ErrUnavailable) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (gave up: %w)", err, context.Cause(ctx))
		}
		left := time.Until(deadline)
		if left <= 0 {
			return err
		}
		t := time.NewTimer(min(pause/2+rand.N(pause/2+1), left)) // #nosec G404 -- jitter spreads retries; it needs no secrecy
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up: %w)", err, context.Cause(ctx))
		case <-t.C:
		}
		pause = min(2*pause, b.Max)
	}
}
