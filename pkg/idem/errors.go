package idem

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Callers test them with errors.Is.
var (
	// ErrInProgress: another owner holds a live lease on the stage. The error
	// is an *InProgressError that says how long the lease still runs.
	ErrInProgress = errors.New("idem: in progress")
	// ErrMismatch: the stage was begun with a different request fingerprint
	// (the key was reused for another payload). Also reported after completion.
	ErrMismatch = errors.New("idem: fingerprint mismatch")
	// ErrLost: the caller no longer owns the stage (its lease ran out and
	// another owner took over, or the stage was released or forgotten).
	// Nothing was written.
	ErrLost = errors.New("idem: lease lost")
	// ErrUnavailable: Redis did not answer within the timeout, or answered
	// with an error. The outcome is unknown; fail closed.
	ErrUnavailable = errors.New("idem: store unavailable")
	// ErrInvalidKey: an idempotency key or merchant id is malformed.
	ErrInvalidKey = errors.New("idem: invalid key")
)

// InProgressError is returned by Begin when another owner holds the stage.
// errors.Is(err, ErrInProgress) is true for it.
type InProgressError struct {
	// RetryAfter is the time left on the other owner's lease.
	RetryAfter time.Duration
	// Attempt is the attempt number of the owner that holds the lease.
	Attempt int
}

func (e *InProgressError) Error() string {
	return fmt.Sprintf("idem: in progress (attempt %d, lease ends in %s)", e.Attempt, e.RetryAfter)
}

// Is reports whether target is ErrInProgress.
func (e *InProgressError) Is(target error) bool { return target == ErrInProgress }

// unavailable wraps a Redis error so that it matches ErrUnavailable and still
// unwraps to its cause (e.g. context.DeadlineExceeded).
func unavailable(op string, k Key, err error) error {
	return fmt.Errorf("idem: %s %s: %w: %w", op, k, ErrUnavailable, err)
}
