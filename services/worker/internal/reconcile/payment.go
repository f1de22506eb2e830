package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemstage"
	"github.com/oncepay/oncepay/services/psp/pspclient"

	"github.com/oncepay/oncepay/services/worker/internal/charge"
	"github.com/oncepay/oncepay/services/worker/internal/payments"
)

// errNotSettled is the stage's work's error when the payment was not
// settled: the stage is released.
var errNotSettled = errors.New("reconcile: payment not settled")

// reconcile works on one pending payment and returns its result (a
// worker_reconcile_total label).
func (r *Reconciler) reconcile(ctx context.Context, p payments.Payment) string {
	m := charge.MessageOf(p)
	msg, err := charge.Decode(m)
	log := r.Log.With("payment_id", p.ID, "merchant_id", p.MerchantID, "idempotency_key", p.IdempotencyKey)
	if err != nil {
		log.Error("reconcile: the payment row is not a valid payment", "err", err)
		return Failed
	}
	var (
		res     string
		redrive bool
		ran     bool
	)
	done, err := r.Stage.WithLogger(log).Do(ctx, msg.Key(), charge.Fingerprint(msg), func(ctx context.Context, _ idemstage.Attempt) ([]byte, error) {
		ran = true
		var o payments.Outcome
		res, o, redrive = r.settle(ctx, log, msg, p.ID)
		if !o.Terminal() {
			return nil, errNotSettled // release the stage
		}
		return charge.StageResult(p.ID, o), nil
	})
	if ip, ok := errors.AsType[*idem.InProgressError](err); ok && !ran {
		log.Debug("reconcile: charge in progress elsewhere; skipped this round", "retry_after", ip.RetryAfter.String())
		return InProgress
	}
	switch {
	case !ran && errors.Is(err, idem.ErrMismatch):
		log.Error("reconcile: idempotency key already used for another payment", "err", err)
		return Failed
	case !ran && err != nil:
		log.Warn("reconcile: boundary unavailable; round stopped", "err", err)
		return BoundaryUnavailable
	case !ran:
		log.Warn("reconcile: the charge stage is completed but the payment is pending", "result", string(done.Result))
		return AlreadySettled
	case errors.Is(err, idem.ErrLost):
		log.Warn("reconcile: lease lost; nothing written", "cause", err)
		return res
	case err != nil && !errors.Is(err, errNotSettled):
		log.Warn("reconcile: stage not completed; its next owner completes it from the database", "err", err)
	}
	if !redrive {
		return res
	}
	outcome, err := r.Charger.Handle(ctx, m)
	log.Info("reconcile: psp has no charge under the key; charged through the charge handler", "outcome", outcome, "err", err)
	return Redriven
}

// settle asks the psp for the charge under msg's key and settles payment
// id by it, while holding the stage (ctx ends when the lease is lost). It
// returns the result, the payment's terminal outcome when it is settled
// (by this call or before), and whether the charge must be re-driven.
func (r *Reconciler) settle(ctx context.Context, log *slog.Logger, msg charge.Initiated, id string) (string, payments.Outcome, bool) {
	p, err := r.Payments.Get(ctx, id)
	switch {
	case lost(ctx):
		return Failed, payments.Outcome{}, false
	case err != nil:
		log.Warn("reconcile: payment not read", "err", err)
		return Failed, payments.Outcome{}, false
	case p.Terminal():
		return AlreadySettled, p.Outcome, false
	}

	lookupCtx, cancel := context.WithTimeout(ctx, r.cfg.PSPTimeout)
	c, err := r.PSP.Lookup(lookupCtx, charge.PSPKey(msg))
	cancel()
	switch {
	case lost(ctx):
		return Failed, payments.Outcome{}, false
	case errors.Is(err, pspclient.ErrNoCharge):
		return Redriven, payments.Outcome{}, true
	case errors.Is(err, pspclient.ErrTransient):
		log.Warn("reconcile: psp unavailable; left pending", "err", err)
		return PSPUnavailable, payments.Outcome{}, false
	case err != nil:
		log.Error("reconcile: psp lookup refused; left pending", "err", err)
		return Failed, payments.Outcome{}, false
	}
	o, err := outcomeOf(c, p)
	if err != nil {
		log.Error("reconcile: the psp's charge under the key disagrees with the payment; left pending", "err", err)
		return Failed, payments.Outcome{}, false
	}
	won, err := r.Payments.Settle(ctx, id, o)
	switch {
	case lost(ctx):
		return Failed, payments.Outcome{}, false
	case err != nil:
		log.Warn("reconcile: payment not settled", "err", err)
		return Failed, payments.Outcome{}, false
	case !won:
		if p, err = r.Payments.Get(ctx, id); err != nil || !p.Terminal() {
			log.Warn("reconcile: payment not re-read after a lost compare-and-set", "err", err)
			return Failed, payments.Outcome{}, false
		}
		return AlreadySettled, p.Outcome, false
	}
	log.Info("reconcile: payment settled from the psp", "status", o.Status, "psp_charge_id", o.PSPChargeID, "failure_reason", o.FailureReason)
	return Settled, o, false
}

// outcomeOf is the payment outcome the psp's charge c stands for, after
// checking that c is a charge of payment p.
func outcomeOf(c pspclient.Charge, p payments.Payment) (payments.Outcome, error) {
	if c.Reference != p.ID || c.Amount != p.Amount || c.Currency != p.Currency {
		return payments.Outcome{}, fmt.Errorf("psp charge %s is %d %s for %q, payment %s is %d %s",
			c.ID, c.Amount, c.Currency, c.Reference, p.ID, p.Amount, p.Currency)
	}
	switch {
	case c.Status == pspclient.StatusSucceeded && c.ID != "":
		return payments.Outcome{Status: payments.Succeeded, PSPChargeID: c.ID}, nil
	case c.Status == pspclient.StatusDeclined:
		return payments.Outcome{Status: payments.Failed, FailureReason: c.DeclineCode}, nil
	}
	return payments.Outcome{}, fmt.Errorf("psp charge %q has status %q", c.ID, c.Status)
}

// lost reports whether ctx ended because the lease was lost.
func lost(ctx context.Context) bool { return errors.Is(context.Cause(ctx), idem.ErrLost) }
