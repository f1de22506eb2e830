package charge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/services/psp/pspclient"

	"github.com/oncepay/oncepay/services/worker/internal/consumer"
	"github.com/oncepay/oncepay/services/worker/internal/metrics"
	"github.com/oncepay/oncepay/services/worker/internal/payments"
)

// paymentStore is the payments table as the handler uses it (*payments.Store).
type paymentStore interface {
	Get(ctx context.Context, id string) (payments.Payment, error)
	Settle(ctx context.Context, id string, o payments.Outcome) (bool, error)
	RecordTakeover(ctx context.Context, paymentID string, attempt int, worker string) error
}

// charger is the psp as the handler uses it (*pspclient.Client).
type charger interface {
	Charge(ctx context.Context, idempotencyKey string, req pspclient.ChargeRequest) (pspclient.Charge, error)
}

// Deps are what a Handler works with.
type Deps struct {
	Boundary   Boundary
	Payments   paymentStore
	PSP        charger
	PSPTimeout time.Duration // bound on one psp call
	// EndRetry is how long Complete and Release are retried in-process
	// (idem.Retry) while Redis does not answer. A charge whose stage still
	// could not be completed then goes to a delayed retry instead of being
	// acked. Zero: one attempt.
	EndRetry time.Duration
	// MaxHold bounds the work done under one claim of the stage, however
	// long the heartbeat keeps the lease: past it the work's context ends
	// with cause ErrHoldExceeded, the stage is released and the delivery
	// goes to a delayed retry. Zero: no bound.
	MaxHold  time.Duration
	Instance string // this worker, recorded with takeovers
	Log      *slog.Logger
	Metrics  *metrics.Metrics
}

// Handler charges the payment of one payment.initiated message. It is a
// consumer.Handler and safe for concurrent use.
type Handler struct{ Deps }

// ErrHoldExceeded is the cause of the work context's end when a delivery
// held the charge stage for Deps.MaxHold.
var ErrHoldExceeded = errors.New("charge stage held past the maximum hold")

// NewHandler returns a Handler.
func NewHandler(d Deps) *Handler { return &Handler{Deps: d} }

// verdict is the end of the owned part of the work: complete the stage
// with result, release it, or (lease lost) leave it alone.
type verdict struct {
	outcome string
	result  []byte // non-nil: Complete with it
	release bool   // Release the stage
	err     error  // for the consumer loop
}

// Handle runs the charge state machine for m (docs/worker.md). It returns a
// metrics outcome and an error for the consumer loop: nil (ack),
// consumer.Retry (delayed retry) or consumer.Reject (dead-letter).
func (h *Handler) Handle(ctx context.Context, m consumer.Message) (string, error) {
	msg, err := Decode(m)
	if err != nil {
		h.Log.Warn("undecodable message", "message_id", m.ID, "err", err)
		return metrics.DeadLettered, consumer.Reject(err)
	}
	log := h.Log.With("payment_id", msg.PaymentID, "merchant_id", msg.MerchantID,
		"idempotency_key", msg.IdempotencyKey, "attempt", m.Attempt, "redelivered", m.Redelivered)

	claim, err := h.Boundary.Begin(ctx, msg.Key(), Stage, Fingerprint(msg))
	if ip, ok := errors.AsType[*idem.InProgressError](err); ok {
		log.Info("charge in progress elsewhere; retrying later", "retry_after", ip.RetryAfter.String())
		return metrics.InProgressRetry, consumer.Retry(err, ip.RetryAfter)
	}
	switch {
	case errors.Is(err, idem.ErrMismatch):
		log.Error("idempotency key already used for another payment", "err", err)
		return metrics.DeadLettered, consumer.Reject(err)
	case err != nil:
		// Redis unreachable, or full (idem.ErrFull, also ErrUnavailable:
		// err says which): the stage cannot be claimed, nothing is charged.
		log.Warn("boundary unavailable; not charging (fail closed)", "err", err)
		return metrics.RedisDown, consumer.Retry(err, 0)
	case claim.Outcome == idem.Completed:
		log.Info("already charged (boundary)", "result", string(claim.Result))
		return metrics.Duplicate, nil
	}

	lease := claim.Lease
	log = log.With("claim_attempt", claim.Attempt)
	if claim.TakeOver {
		h.Metrics.TakeOver()
		log.Warn("took over an expired lease")
		if err := h.Payments.RecordTakeover(ctx, msg.PaymentID, claim.Attempt, h.Instance); err != nil {
			log.Error("takeover not recorded", "err", err)
		}
	}

	work, stop := lease.Keep(ctx)
	work, endHold := h.hold(work)
	v := h.charge(work, log, msg)
	held := errors.Is(context.Cause(work), ErrHoldExceeded)
	endHold()
	stop()
	switch {
	case v.result != nil:
		err := h.endLease(ctx, log, idem.OpComplete, func(ctx context.Context) error { return lease.Complete(ctx, v.result) })
		switch {
		case errors.Is(err, idem.ErrUnavailable):
			// The database holds the outcome, the boundary does not. Acking
			// would leave the stage PENDING until the retention ends, since
			// nothing else claims it again. The delayed retry does: after
			// the lease it takes the stage over, finds the payment terminal
			// and completes the stage from the row.
			log.Warn("stage not completed; delayed retry to complete it from the database", "err", err)
			return v.outcome, consumer.Retry(fmt.Errorf("complete charge stage of %s: %w", msg.PaymentID, err), 0)
		case err != nil:
			// ErrLost: another owner took the stage over after our lease
			// ran out; it finds the payment terminal and completes it.
			log.Warn("stage not completed; its new owner completes it from the database", "err", err)
		}
	case lost(work):
		log.Warn("lease lost; nothing written", "cause", context.Cause(work))
		return metrics.LostLease, consumer.Retry(fmt.Errorf("charge %s: %w", msg.PaymentID, context.Cause(work)), 0)
	case held:
		// The work was cut off (a blocked query, a slow psp) while the
		// lease was still ours: give the stage back and try again later.
		log.Warn("charge stage held past the maximum hold; releasing it, retrying later", "max_hold", h.MaxHold.String())
		if err := h.endLease(ctx, log, idem.OpRelease, lease.Release); err != nil {
			log.Warn("stage not released; it frees up when the lease ends", "err", err)
		}
		return metrics.TransientRetry, consumer.Retry(fmt.Errorf("charge %s: %w", msg.PaymentID, ErrHoldExceeded), 0)
	case v.release:
		if err := h.endLease(ctx, log, idem.OpRelease, lease.Release); err != nil {
			log.Warn("stage not released; it frees up when the lease ends", "err", err)
		}
	}
	return v.outcome, v.err
}

// hold bounds work by MaxHold, with cause ErrHoldExceeded; call end when the
// work is done.
func (h *Handler) hold(work context.Context) (context.Context, context.CancelFunc) {
	if h.MaxHold <= 0 {
		return context.WithCancel(work)
	}
	return context.WithTimeoutCause(work, h.MaxHold, ErrHoldExceeded)
}

// endLease runs end (Complete or Release, named op) once; if Redis did not
// answer, it retries with idem.Retry for up to EndRetry, and counts how
// that ended. The first call reaches Redis even when ctx has ended (the
// shutdown grace ran out: the stage should not wait for its lease); the
// retries stop when ctx ends. The store bounds each call with its timeout.
func (h *Handler) endLease(ctx context.Context, log *slog.Logger, op idem.Op, end func(context.Context) error) error {
	err := end(context.WithoutCancel(ctx))
	if !errors.Is(err, idem.ErrUnavailable) {
		return err
	}
	log.Warn("boundary unavailable; retrying", "op", op, "for", h.EndRetry.String(), "err", err)
	err = idem.Retry(ctx, idem.Backoff{Limit: h.EndRetry}, end)
	switch {
	case err == nil:
		h.Metrics.LeaseEndRetried(op, metrics.EndRecovered)
		log.Info("boundary answered again", "op", op)
	case errors.Is(err, idem.ErrLost):
		h.Metrics.LeaseEndRetried(op, metrics.EndLost)
	default:
		h.Metrics.LeaseEndRetried(op, metrics.EndGaveUp)
	}
	return err
}

// charge is the part of the work done under the lease: ctx ends, with cause
// idem.ErrLost, when the lease is lost, and nothing is written after that;
// it ends with cause ErrHoldExceeded after MaxHold.
func (h *Handler) charge(ctx context.Context, log *slog.Logger, msg Initiated) verdict {
	p, err := h.Payments.Get(ctx, msg.PaymentID)
	switch {
	case lost(ctx):
		return verdict{}
	case errors.Is(err, payments.ErrNotFound):
		log.Error("payment does not exist; dead-lettering", "err", err)
		return verdict{outcome: metrics.DeadLettered, release: true, err: consumer.Reject(err)}
	case err != nil:
		log.Warn("database unavailable; retrying later", "err", err)
		return verdict{outcome: metrics.TransientRetry, release: true, err: consumer.Retry(err, 0)}
	}
	if err := agree(p, msg); err != nil {
		log.Error("message disagrees with the payment row; dead-lettering", "err", err)
		return verdict{outcome: metrics.DeadLettered, release: true, err: consumer.Reject(err)}
	}
	if p.Terminal() {
		log.Info("already charged (database)", "status", p.Status)
		return verdict{outcome: metrics.Duplicate, result: resultOf(p.ID, p.Outcome)}
	}

	o, v, ok := h.callPSP(ctx, log, msg)
	if !ok {
		return v
	}
	if lost(ctx) {
		return verdict{}
	}
	won, err := h.Payments.Settle(ctx, p.ID, o)
	switch {
	case lost(ctx):
		return verdict{}
	case err != nil:
		log.Warn("payment not settled; retrying later (the psp replays the charge)", "err", err)
		return verdict{outcome: metrics.TransientRetry, release: true, err: consumer.Retry(err, 0)}
	case !won:
		// Someone else settled it first: their outcome stands.
		if p, err = h.Payments.Get(ctx, p.ID); err != nil || !p.Terminal() {
			return verdict{outcome: metrics.TransientRetry, release: true, err: consumer.Retry(fmt.Errorf("re-read payment after a lost compare-and-set: %w", err), 0)}
		}
		log.Info("payment settled by another worker", "status", p.Status)
		return verdict{outcome: metrics.Duplicate, result: resultOf(p.ID, p.Outcome)}
	}
	outcome := metrics.Charged
	switch {
	case strings.HasPrefix(o.FailureReason, RejectionPrefix):
		outcome = metrics.Rejected
	case o.Status == payments.Failed:
		outcome = metrics.Declined
	}
	log.Info("payment settled", "status", o.Status, "psp_charge_id", o.PSPChargeID, "failure_reason", o.FailureReason)
	return verdict{outcome: outcome, result: resultOf(p.ID, o)}
}

// callPSP charges msg with its psp key (pspKey: the propagated key in the
// production build). It returns the terminal
// outcome, or ok false and the verdict for a failure.
func (h *Handler) callPSP(ctx context.Context, log *slog.Logger, msg Initiated) (payments.Outcome, verdict, bool) {
	ctx, cancel := context.WithTimeout(ctx, h.PSPTimeout)
	defer cancel()
	start := time.Now()
	c, err := h.PSP.Charge(ctx, pspKey(h.Boundary, msg), pspclient.ChargeRequest{
		Amount: msg.Amount, Currency: msg.Currency, CustomerID: msg.CustomerID, Reference: msg.PaymentID,
	})
	result := c.Status
	if err != nil {
		result = "error"
	}
	h.Metrics.PSPCall(result, time.Since(start))
	switch {
	case err == nil && c.Status == pspclient.StatusSucceeded && c.ID != "":
		return payments.Outcome{Status: payments.Succeeded, PSPChargeID: c.ID}, verdict{}, true
	case err == nil && c.Status == pspclient.StatusDeclined:
		return payments.Outcome{Status: payments.Failed, FailureReason: c.DeclineCode}, verdict{}, true
	case err == nil:
		err = fmt.Errorf("psp answered status %q, charge id %q", c.Status, c.ID)
	case lost(ctx):
		return payments.Outcome{}, verdict{}, false
	case errors.Is(err, pspclient.ErrRejected):
		// The psp refused the request itself (400, 413, 422): it will
		// never charge it, under this key or by retrying. The payment
		// fails with the psp's reason, like a decline; the message is
		// not poison and the payment must not stay pending.
		log.Warn("psp rejected the charge for good; failing the payment", "err", err)
		return payments.Outcome{Status: payments.Failed, FailureReason: RejectionReason(err)}, verdict{}, true
	case isClientError(err):
		// 401, 403, 404, 415...: the worker's setup is wrong (psp URL,
		// credentials, client), not the payment. Retry until it is fixed.
		log.Error("psp refused the worker's call; retrying later", "err", err)
	}
	log.Warn("psp call failed; retrying later with the same key", "err", err)
	return payments.Outcome{}, verdict{outcome: metrics.TransientRetry, release: true, err: consumer.Retry(err, 0)}, false
}

// agree checks that the message describes payment p.
func agree(p payments.Payment, m Initiated) error {
	var errs []error
	for _, f := range []struct{ name, row, msg string }{
		{"merchant_id", p.MerchantID, m.MerchantID},
		{"idempotency_key", p.IdempotencyKey, m.IdempotencyKey},
		{"currency", p.Currency, m.Currency},
		{"customer_id", p.CustomerID, m.CustomerID},
	} {
		if f.row != f.msg {
			errs = append(errs, fmt.Errorf("%s: row %q, message %q", f.name, f.row, f.msg))
		}
	}
	if p.Amount != m.Amount {
		errs = append(errs, fmt.Errorf("amount: row %d, message %d", p.Amount, m.Amount))
	}
	return errors.Join(errs...)
}

// isClientError reports a 4xx answer from the psp.
func isClientError(err error) bool {
	e, ok := errors.AsType[*pspclient.Error](err)
	return ok && e.StatusCode >= 400 && e.StatusCode < 500
}

// lost reports whether ctx ended because the lease was lost.
func lost(ctx context.Context) bool { return errors.Is(context.Cause(ctx), idem.ErrLost) }

// RejectionPrefix starts the failure_reason of a payment whose charge the
// psp rejected for good (pspclient.ErrRejected); the psp's reason follows.
const RejectionPrefix = "rejected: "

// maxReasonLen bounds a rejection's failure_reason, in bytes.
const maxReasonLen = 500

// RejectionReason is the failure_reason for err, a pspclient.ErrRejected:
// "rejected: " and the psp's reason (pspclient.Error.Reason), cut to at
// most 500 bytes on a character boundary.
func RejectionReason(err error) string {
	why := "the psp rejected the request"
	if e, ok := errors.AsType[*pspclient.Error](err); ok {
		why = e.Reason()
	}
	r := RejectionPrefix + why
	if len(r) <= maxReasonLen {
		return r
	}
	r = r[:maxReasonLen]
	for len(r) > 0 && !utf8.ValidString(r) {
		r = r[:len(r)-1]
	}
	return r
}
