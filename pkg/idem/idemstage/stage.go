package idemstage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
)

// ErrHoldExceeded is the cause of the work context's end when the work held
// the stage for Config.MaxHold; Do's error then matches it.
var ErrHoldExceeded = errors.New("idemstage: stage held past the maximum hold")

// Config tunes a Stage. Zero fields take the documented defaults.
type Config struct {
	// Stage names the stage in the key's record ("charge", "ship").
	// Required: New panics without it.
	Stage string
	// EndRetry is how long Complete and Release are retried (idem.Retry)
	// while Redis does not answer. Zero: one attempt.
	EndRetry time.Duration
	// MaxHold bounds the work done under one claim, however long the
	// heartbeat keeps the lease: past it the work's context ends with cause
	// ErrHoldExceeded and the stage is released. Zero: no bound.
	MaxHold time.Duration
	// OnEndRetry, if set, is called once per Do whose Complete or Release
	// Redis did not answer at first and that was retried for EndRetry,
	// with the operation and how the retry ended: EndRecovered, EndLost
	// or EndGaveUp (a metric's labels).
	OnEndRetry func(op idem.Op, outcome string)
	// Logger receives a warning when a stage could not be ended at first,
	// or at all. Default: none. See also Stage.WithLogger.
	Logger *slog.Logger
}

// How a retried end of a stage ended (Config.OnEndRetry).
const (
	EndRecovered = "recovered" // a retry got through
	EndLost      = "lost"      // another owner had taken the stage over (nothing written)
	EndGaveUp    = "gave_up"   // still unavailable when EndRetry ran out, or ctx ended
)

// Stage runs one stage of an operation at most once per key. It is safe
// for concurrent use.
type Stage struct {
	boundary Boundary
	cfg      Config
}

// New returns a Stage that claims cfg.Stage on the store s.
func New(s *idem.Store, cfg Config) *Stage { return NewOn(store{s}, cfg) }

// NewOn returns a Stage that claims cfg.Stage on b, an implementation of
// idem.Store's contract other than *idem.Store itself.
func NewOn(b Boundary, cfg Config) *Stage {
	if cfg.Stage == "" {
		panic("idemstage: Config.Stage is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Stage{boundary: b, cfg: cfg}
}

// WithLogger returns a Stage like s that logs to l: a logger that carries
// the message's attributes, so that the stage's lines name it.
func (s *Stage) WithLogger(l *slog.Logger) *Stage {
	c := *s
	c.cfg.Logger = l
	return &c
}

// Attempt is what the work is told about its claim.
type Attempt struct {
	// Key is the operation's key: pass a key derived from it to the
	// provider as its idempotency key (the payments worker sends
	// Merchant() + ":" + ID()).
	Key idem.Key
	// Number counts the claims of the stage, from 1.
	Number int
	// TakeOver: an earlier claim's lease expired without an end; its
	// effect may be done.
	TakeOver bool
}

// Work is the stage's side effect. It runs under the lease: ctx ends when
// the work must stop writing (see the package doc). Its result is stored
// and returned to every redelivery; an error releases the stage, so the
// next delivery runs the work again. A failure that must not be retried
// is a result, not an error.
type Work func(ctx context.Context, a Attempt) ([]byte, error)

// Done is what Do found or did.
type Done struct {
	// Result is the stage's result: the work's, or the stored one.
	Result []byte
	// Replayed: the stage was completed before; the work did not run.
	Replayed bool
}

// Do runs work for the stage of k, once per key, for a message with the
// given fingerprint (messages that share a key must share it).
//
// It returns the stored result, Replayed, when the stage is completed; an
// *idem.InProgressError when another owner holds it; idem.ErrMismatch when
// it was completed under another fingerprint; an idem.ErrUnavailable error
// when Redis does not answer Begin (nothing ran). Otherwise the work ran:
// its result is returned once the stage is completed (also when another
// owner took the stage over meanwhile: it completes the stage, and the
// effect is done), or an error that wraps the work's error (the stage was
// released), or matches idem.ErrLost (the lease ended under the work: not
// released, nothing should have been written after), ErrHoldExceeded
// (released) or idem.ErrUnavailable (the effect is done, the stage is not
// completed: redeliver). A panic in work releases the stage and goes on.
//
// The first Complete or Release is sent even when ctx has ended (a
// shutdown's grace ran out: the stage should not wait out its lease); its
// retries stop when ctx ends.
func (s *Stage) Do(ctx context.Context, k idem.Key, fingerprint string, work Work) (Done, error) {
	claim, err := s.boundary.Begin(ctx, k, s.cfg.Stage, fingerprint)
	switch {
	case err != nil:
		return Done{}, fmt.Errorf("idemstage: begin %s stage %s: %w", k, s.cfg.Stage, err)
	case claim.Outcome == idem.Completed:
		return Done{Result: claim.Result, Replayed: true}, nil
	}
	lease := claim.Lease
	settled := false
	defer func() {
		if !settled { // work panicked: give the stage back before the panic goes on
			if err := s.end(ctx, k, idem.OpRelease, lease.Release); err != nil {
				s.cfg.Logger.Warn("idemstage: release after a panic", "key", k.String(), "stage", s.cfg.Stage, "err", err)
			}
		}
	}()

	kept, stop := lease.Keep(ctx)
	held, endHold := s.hold(kept)
	result, werr := work(held, Attempt{Key: k, Number: claim.Attempt, TakeOver: claim.TakeOver})
	cause := context.Cause(held) // before stop, which cancels without a cause
	endHold()
	stop()
	settled = true

	switch {
	case werr == nil:
		err := s.end(ctx, k, idem.OpComplete, func(ctx context.Context) error { return lease.Complete(ctx, result) })
		switch {
		case errors.Is(err, idem.ErrUnavailable):
			return Done{Result: result}, fmt.Errorf("idemstage: %s stage %s done but not completed, redeliver to complete it: %w", k, s.cfg.Stage, err)
		case err != nil: // ErrLost: the new owner finds the effect and completes the stage
			s.cfg.Logger.Warn("idemstage: stage not completed; its new owner completes it", "key", k.String(), "stage", s.cfg.Stage, "err", err)
		}
		return Done{Result: result}, nil
	case errors.Is(cause, idem.ErrLost):
		return Done{}, fmt.Errorf("idemstage: %s stage %s: %w (work: %w)", k, s.cfg.Stage, cause, werr)
	}
	if err := s.end(ctx, k, idem.OpRelease, lease.Release); err != nil {
		s.cfg.Logger.Warn("idemstage: stage not released; it frees up when the lease ends", "key", k.String(), "stage", s.cfg.Stage, "err", err)
	}
	if errors.Is(cause, ErrHoldExceeded) {
		return Done{}, fmt.Errorf("idemstage: %s stage %s: %w (work: %w)", k, s.cfg.Stage, ErrHoldExceeded, werr)
	}
	return Done{}, fmt.Errorf("idemstage: %s stage %s: %w", k, s.cfg.Stage, werr)
}

// hold bounds work by MaxHold, with cause ErrHoldExceeded.
func (s *Stage) hold(work context.Context) (context.Context, context.CancelFunc) {
	if s.cfg.MaxHold <= 0 {
		return context.WithCancel(work)
	}
	return context.WithTimeoutCause(work, s.cfg.MaxHold, ErrHoldExceeded)
}

// end runs end (Complete or Release, named op) once, even when ctx has
// ended; if Redis did not answer, it retries for up to EndRetry while ctx
// lasts, and tells OnEndRetry how that ended.
func (s *Stage) end(ctx context.Context, k idem.Key, op idem.Op, end func(context.Context) error) error {
	err := end(context.WithoutCancel(ctx))
	if !errors.Is(err, idem.ErrUnavailable) || s.cfg.EndRetry <= 0 {
		return err
	}
	s.cfg.Logger.Warn("idemstage: boundary unavailable; retrying", "key", k.String(), "stage", s.cfg.Stage, "op", op, "for", s.cfg.EndRetry.String(), "err", err)
	err = idem.Retry(ctx, idem.Backoff{Limit: s.cfg.EndRetry}, end)
	outcome := EndGaveUp
	switch {
	case err == nil:
		outcome = EndRecovered
		s.cfg.Logger.Info("idemstage: boundary answered again", "key", k.String(), "stage", s.cfg.Stage, "op", op)
	case errors.Is(err, idem.ErrLost):
		outcome = EndLost
	}
	if s.cfg.OnEndRetry != nil {
		s.cfg.OnEndRetry(op, outcome)
	}
	return err
}
