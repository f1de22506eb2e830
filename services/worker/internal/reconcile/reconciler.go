// Package reconcile settles payments that stayed pending: a message lost or
// dead-lettered, or a charge whose answer was lost and never retried. Every
// Interval the Reconciler reads up to Batch payments pending for longer
// than After, the earliest due first, and for each one claims the charge
// stage through the boundary and asks the psp for the charge stored under
// the payment's idempotency key:
//
//	stage in progress elsewhere   skip it this round (its owner settles it)
//	psp has a charge or decline   settle with the payments compare-and-set
//	                              (the charge id, or failed with the decline code),
//	                              complete the stage
//	psp has nothing under the key release the stage and re-drive the charge
//	                              through the charge handler (see Reconciler)
//	psp or boundary unavailable   release the stage, leave the payment pending
//	                              (never failed for it) and end the round: the
//	                              next round asks again
//
// A payment it looked at and did not settle is put off (payments.Store.Defer):
// due again after Interval × 2^(n−1) at its n-th look, at most
// MaxBackoffFactor × Interval. A payment is due at its creation until then,
// so one that cannot be settled goes behind every other pending payment:
// any number of them cannot starve a later one.
//
// It also sets payments_oldest_pending_age_seconds every round.
package reconcile

import (
	"context"
	"log/slog"
	"time"

	"github.com/oncepay/oncepay/pkg/idem/idemstage"
	"github.com/oncepay/oncepay/services/psp/pspclient"

	"github.com/oncepay/oncepay/services/worker/internal/consumer"
	"github.com/oncepay/oncepay/services/worker/internal/payments"
)

// MaxBackoffFactor bounds a payment's backoff: at most this many Intervals.
const MaxBackoffFactor = 64

// Config tunes a Reconciler.
type Config struct {
	After      time.Duration // a payment pending longer than this is reconciled
	Interval   time.Duration // between rounds
	Batch      int           // payments per round at most, the earliest due first
	PSPTimeout time.Duration // bound on one psp lookup
	// MeasureOnly: only set the gauge, settle nothing (the comparison
	// strategies, which must show their own failures).
	MeasureOnly bool
}

// store is the payments table as the reconciler uses it (*payments.Store).
type store interface {
	Pending(ctx context.Context, olderThan time.Duration, limit int) ([]payments.Payment, error)
	OldestPendingAge(ctx context.Context) (time.Duration, error)
	Get(ctx context.Context, id string) (payments.Payment, error)
	Settle(ctx context.Context, id string, o payments.Outcome) (bool, error)
	Defer(ctx context.Context, id string, base, limit time.Duration) error
}

// psp is the psp as the reconciler uses it (*pspclient.Client).
type psp interface {
	Lookup(ctx context.Context, idempotencyKey string) (pspclient.Charge, error)
}

// Deps are what a Reconciler works with.
type Deps struct {
	// Stage is the charge stage (charge.NewStage), claimed with a
	// delivery's key and fingerprint.
	Stage    *idemstage.Stage
	Payments store
	PSP      psp
	// Charger charges a payment the psp has nothing for: the worker's
	// charge handler (*charge.Handler), the normal charge path.
	Charger consumer.Handler
	Log     *slog.Logger
	Metrics *Metrics
}

// Reconciler settles payments left pending. Several may run at once, in
// one worker or in several, next to the charge handlers: the boundary lets
// one of them work on a payment at a time, the compare-and-set lets the
// first settlement win, and the psp's idempotency by key makes a second
// charge attempt a replay of the first.
//
// A payment the psp has nothing for is charged by calling Charger.Handle
// with the payment's message (charge.MessageOf), in this goroutine, after
// the stage is released: the same state machine, boundary claim and psp key
// as a delivery, so a delivery of the same payment racing it finds the
// stage in progress or completed. Re-publishing the message instead would
// need a publisher of its own and leave the outcome to a later round;
// calling the handler settles it now or fails like a delivery would.
type Reconciler struct {
	cfg Config
	Deps
}

// New returns a Reconciler.
func New(cfg Config, d Deps) *Reconciler { return &Reconciler{cfg: cfg, Deps: d} }

// Run runs a round at once and then every Interval until ctx ends; it
// returns after the round in progress (each call in it is bounded by ctx).
func (r *Reconciler) Run(ctx context.Context) {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		r.Round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Round sets the oldest-pending gauge and reconciles up to Batch payments
// pending for longer than After, the earliest due first, and puts off each
// one it did not settle. Errors are logged and counted, never returned:
// the next round tries again.
func (r *Reconciler) Round(ctx context.Context) {
	age, err := r.Payments.OldestPendingAge(ctx)
	if err != nil {
		r.Log.Warn("reconcile: oldest pending payment not read", "err", err)
	} else {
		r.Metrics.oldestPending.Set(age.Seconds())
	}
	if r.cfg.MeasureOnly || ctx.Err() != nil {
		return
	}
	ps, err := r.Payments.Pending(ctx, r.cfg.After, r.cfg.Batch)
	if err != nil {
		r.Log.Warn("reconcile: pending payments not read", "err", err)
		return
	}
	for _, p := range ps {
		if ctx.Err() != nil {
			return
		}
		res := r.reconcile(ctx, p)
		r.Metrics.results.WithLabelValues(res).Inc()
		// Settled payments are left alone by Defer. The others, the one
		// that ended the round included, go behind every payment due
		// before them.
		if err := r.Payments.Defer(context.WithoutCancel(ctx), p.ID, r.cfg.Interval, MaxBackoffFactor*r.cfg.Interval); err != nil {
			r.Log.Warn("reconcile: payment not put off", "payment_id", p.ID, "err", err)
		}
		if res == BoundaryUnavailable || res == PSPUnavailable {
			return // the others would fail the same way; the next round starts over
		}
	}
}
