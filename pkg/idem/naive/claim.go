package naive

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
)

// Marker is the value SetNXMarker and LockThenCheck store while the work
// runs. A result is never equal to it (results are JSON).
const Marker = "in-progress"

// Prefix starts every key the strategies write, so that they never touch the
// real boundary's idem:v1:* hashes.
const Prefix = "naive:v1:"

// Claim is what a strategy's Begin found, shaped like idem.Claim so that
// the services' teaching build uses it where the production build uses
// idem.Claim.
type Claim struct {
	// Outcome is idem.Acquired (Lease is set) or idem.Completed (Result is
	// set).
	Outcome idem.Outcome
	// Attempt and TakeOver are the real boundary's (Boundary of Real);
	// the strategies leave them zero: they count no claims.
	Attempt  int
	TakeOver bool
	Lease    *Lease
	// Result is the stored result, byte for byte, when Outcome is Completed.
	Result []byte
}

// Lease is the caller's claim on a stage, shaped like idem.Lease. A
// strategy's lease has no owner: Complete and Release act on whatever the
// key holds. A lease of the real boundary (Boundary of Real) delegates
// every method to its *idem.Lease. It is safe for concurrent use as far
// as Redis is.
type Lease struct {
	real     *idem.Lease
	key      string
	stage    string
	cfg      idem.Config
	complete func(ctx context.Context, result []byte) error
	release  func(ctx context.Context) error
}

// Complete stores result. Every strategy writes it unconditionally: there
// is no owner to check. Redis errors wrap idem.ErrUnavailable.
func (l *Lease) Complete(ctx context.Context, result []byte) error {
	if l.real != nil {
		return l.real.Complete(ctx, result)
	}
	return l.run(ctx, idem.OpComplete, func(ctx context.Context) error { return l.complete(ctx, result) })
}

// Release gives the key back after an error, as the strategy does it (for
// GetThenSet and Trusting there is nothing to give back). Redis errors wrap
// idem.ErrUnavailable.
func (l *Lease) Release(ctx context.Context) error {
	if l.real != nil {
		return l.real.Release(ctx)
	}
	return l.run(ctx, idem.OpRelease, l.release)
}

// Keep returns ctx and a stop function that does nothing: the naive
// strategies have no heartbeat, so their claims can never be lost early,
// and never noticed lost either. A lease of the real boundary keeps its
// *idem.Lease alive (idem.Lease.Keep).
func (l *Lease) Keep(ctx context.Context) (context.Context, func()) {
	if l.real != nil {
		return l.real.Keep(ctx)
	}
	return ctx, func() {}
}

// CompleteAs stores result as the answer of the request with fingerprint
// (idem.Lease.CompleteAs). The strategies keep no fingerprint, so they
// cannot record another request's answer: they give the key back, as
// Release does, and nothing of this request is stored.
func (l *Lease) CompleteAs(ctx context.Context, fingerprint string, result []byte) error {
	if l.real != nil {
		return l.real.CompleteAs(ctx, fingerprint, result)
	}
	return l.Release(ctx)
}

func (l *Lease) run(ctx context.Context, op idem.Op, fn func(context.Context) error) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	defer cancel()
	err := fn(ctx)
	if err != nil {
		err = unavailable(op, l.key, err)
	}
	report(l.cfg, op, l.stage, start, Claim{}, err)
	return err
}

// timedBegin runs begin on the Redis key of stage of k, bounded by
// cfg.Timeout, and reports the call to cfg.Observe: the part of Begin that
// every strategy shares.
func timedBegin(ctx context.Context, cfg idem.Config, k idem.Key, stage string, begin func(ctx context.Context, key string) (Claim, error)) (Claim, error) {
	start := time.Now()
	key := redisKey(k, stage)
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	c, err := begin(ctx, key)
	report(cfg, idem.OpBegin, stage, start, c, err)
	return c, err
}

// defaults fills cfg's zero fields with idem's defaults.
func defaults(cfg idem.Config) idem.Config {
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.Retention <= 0 {
		cfg.Retention = 24 * time.Hour
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Second
	}
	return cfg
}

// redisKey is the key of stage of k: naive:v1:{<merchant>:<key>}:<stage>.
func redisKey(k idem.Key, stage string) string {
	return Prefix + "{" + k.Merchant() + ":" + k.ID() + "}:" + stage
}

// inProgress is the answer while a marker is there. The strategies cannot
// know how long the other owner will take; they guess a second.
func inProgress() error { return &idem.InProgressError{RetryAfter: time.Second} }

func unavailable(op idem.Op, key string, err error) error {
	return fmt.Errorf("naive: %s %s: %w: %w", op, key, idem.ErrUnavailable, err)
}

// report tells cfg.Observe about one operation, with the real boundary's
// outcome names, so that the services' metrics work unchanged.
func report(cfg idem.Config, op idem.Op, stage string, start time.Time, c Claim, err error) {
	if cfg.Observe == nil {
		return
	}
	outcome := idem.OutcomeOK
	switch {
	case errors.Is(err, idem.ErrInProgress):
		outcome = idem.OutcomeInProgress
	case err != nil:
		outcome = idem.OutcomeUnavailable
	case op == idem.OpBegin && c.Outcome == idem.Completed:
		outcome = idem.OutcomeReplayed
	case op == idem.OpBegin:
		outcome = idem.OutcomeAcquired
	}
	cfg.Observe(idem.Event{Op: op, Stage: stage, Outcome: outcome, Duration: time.Since(start), Err: err})
}
