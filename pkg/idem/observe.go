package idem

import (
	"errors"
	"time"
)

// Op names a boundary operation in an Event.
type Op string

// The operations reported to Config.Observe.
const (
	OpBegin    Op = "begin"
	OpComplete Op = "complete"
	OpRelease  Op = "release"
	OpExtend   Op = "extend"
)

// Outcomes reported in Event.Outcome; stable strings, usable as metric labels.
const (
	OutcomeAcquired    = "acquired"    // Begin: first claim, or claim after a release
	OutcomeTakeover    = "takeover"    // Begin: claim over an expired lease
	OutcomeReplayed    = "replayed"    // Begin: stage already completed
	OutcomeInProgress  = "in_progress" // Begin: another owner's lease is live
	OutcomeMismatch    = "mismatch"    // Begin: other fingerprint
	OutcomeOK          = "ok"          // Complete, Release, Extend succeeded
	OutcomeLost        = "lost"        // Complete, Release, Extend: not the owner
	OutcomeUnavailable = "unavailable" // any: Redis failed
	OutcomeFull        = "full"        // any: Redis refused a write, out of memory (ErrFull)
	OutcomeShed        = "shed"        // any: refused unsent, the store's queue was full (ErrOverloaded)
)

// Event describes one finished boundary operation.
type Event struct {
	Op       Op
	Stage    string
	Outcome  string
	Duration time.Duration
	Err      error
}

func (s *Store) observe(op Op, stage, outcome string, start time.Time, err error) {
	if s.cfg.Observe != nil {
		s.cfg.Observe(Event{Op: op, Stage: stage, Outcome: outcome, Duration: time.Since(start), Err: err})
	}
}

func beginOutcome(c Claim, err error) string {
	switch {
	case err == nil && c.Outcome == Completed:
		return OutcomeReplayed
	case err == nil && c.TakeOver:
		return OutcomeTakeover
	case err == nil:
		return OutcomeAcquired
	}
	return resultOutcome(err)
}

func resultOutcome(err error) string {
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, ErrInProgress):
		return OutcomeInProgress
	case errors.Is(err, ErrMismatch):
		return OutcomeMismatch
	case errors.Is(err, ErrLost):
		return OutcomeLost
	case errors.Is(err, ErrFull):
		return OutcomeFull
	case errors.Is(err, ErrOverloaded):
		return OutcomeShed
	}
	return OutcomeUnavailable
}
