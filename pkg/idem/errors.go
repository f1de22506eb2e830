package idem

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
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
	// with an error (ErrFull is one of those). The outcome is unknown; fail
	// closed.
	ErrUnavailable = errors.New("idem: store unavailable")
	// ErrFull: Redis is out of memory. Its used memory is above maxmemory
	// and its maxmemory-policy is noeviction (as oncepay runs it), so it
	// refuses every command that may grow its data set with "OOM command
	// not allowed when used memory > 'maxmemory'". A script is refused at
	// its first such command (the scripts declare no flags), before it has
	// written anything: Begin of a new or released stage, a takeover,
	// Complete and Extend (all HSET) fail and write nothing. What only reads
	// still answers: Begin of a COMPLETED stage replays its result, and
	// MISMATCH and IN_PROGRESS are reported as usual; Release (HDEL) still
	// works.
	//
	// ErrFull is a kind of ErrUnavailable: errors.Is(err, ErrUnavailable)
	// holds for every ErrFull error, so a caller that fails closed on
	// ErrUnavailable does so here too, and Retry keeps retrying it. Test
	// ErrFull first only to name the cause (the api's 503 says so).
	ErrFull error = fullError{}
	// ErrOverloaded: the store's queue of calls waiting for Redis was full
	// (Config.MaxQueue): Redis is stalled or slower than the calls
	// arrive. The call failed at once and was not sent: nothing was done.
	// Like ErrFull it is a kind of ErrUnavailable (errors.Is(err,
	// ErrUnavailable) holds), so callers fail closed and Retry retries it.
	ErrOverloaded error = overloadedError{}
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

// fullError is ErrFull: it matches itself and ErrUnavailable.
type fullError struct{}

func (fullError) Error() string { return "idem: store out of memory" }

// Is reports whether target is ErrUnavailable (ErrFull itself matches by
// equality).
func (fullError) Is(target error) bool { return target == ErrUnavailable }

// overloadedError is ErrOverloaded: it matches itself and ErrUnavailable.
type overloadedError struct{}

func (overloadedError) Error() string { return "idem: store overloaded, call not sent" }

// Is reports whether target is ErrUnavailable (ErrOverloaded itself
// matches by equality).
func (overloadedError) Is(target error) bool { return target == ErrUnavailable }

// unavailable wraps a Redis error so that it matches ErrUnavailable and still
// unwraps to its cause (e.g. context.DeadlineExceeded). An out-of-memory
// refusal also matches ErrFull.
func unavailable(op string, k Key, err error) error {
	if isOOM(err) {
		return fmt.Errorf("idem: %s %s: %w: %w", op, k, ErrFull, err)
	}
	return fmt.Errorf("idem: %s %s: %w: %w", op, k, ErrUnavailable, err)
}

// isOOM reports whether err is Redis's out-of-memory refusal: an error
// reply starting with "OOM " (Redis 7 passes a script's failed redis.call
// error on with its code), or, as Redis 6 words a script's failure, one
// that carries "OOM command not allowed" inside "ERR Error running script".
func isOOM(err error) bool {
	if redis.IsOOMError(err) {
		return true
	}
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.Contains(rerr.Error(), "OOM command not allowed")
}
