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
	"github.com/oncepay/oncepay/pkg/idem/idemstage"
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
	// (idemstage.Config.EndRetry) while Redis does not answer. A charge
	// whose stage still could not be completed then goes to a delayed
	// retry instead of being acked. Zero: one attempt.
	EndRetry time.Duration
	// MaxHold bounds the work done under one claim of the stage, however
	// long the heartbeat keeps the lease (idemstage.Config.MaxHold): past
	// it the stage is released and the delivery goes to a delayed retry.
	// Zero: no bound.
	MaxHold  time.Duration
	Instance string // this worker, recorded with takeovers
	Log      *slog.Logger
	Metrics  *metrics.Metrics
}

// Handler charges the payment of one payment.initiated message. It is a
// consumer.Handler and safe for concurrent use.
type Handler struct {
	Deps
	stage *idemstage.Stage
}

// NewHandler returns a Handler that runs the charge stage on d.Boundary
// through idemstage.
func NewHandler(d Deps) *Handler {
	return &Handler{Deps: d, stage: NewStage(d.Boundary, idemstage.Config{
		Stage: Stage, EndRetry: d.EndRetry, MaxHold: d.MaxHold,
		OnEndRetry: d.Metrics.LeaseEndRetried, Logger: d.Log,
	})}
}

// verdict is how the charge ended: complete the stage with result, or
// (result nil) end the delivery with err, releasing the stage unless the
// lease was lost.
type verdict struct {
	outcome string
	result  []byte // non-nil: Complete with it
	err     error  // for the consumer loop; the lease's cause when it was lost
}

// Handle runs the charge state machine for m (docs/worker.md): the charge
// stage of its key through idemstage.Stage.Do, with charge as the work. It
// returns a metrics outcome and an error for the consumer loop: nil (ack),
// consumer.Retry (delayed retry) or consumer.Reject (dead-letter).
func (h *Handler) Handle(ctx context.Context, m consumer.Message) (string, error) {
	msg, err := Decode(m)
	if err != nil {
		h.Log.Warn("undecodable message", "message_id", m.ID, "err", err)
		return metrics.DeadLettered, consumer.Reject(err)
	}
	log := h.Log.With("payment_id", msg.PaymentID, "merchant_id", msg.MerchantID,
		"idempotency_key", msg.IdempotencyKey, "attempt", m.Attempt, "redelivered", m.Redelivered)

	var v verdict
	ran := false
	done, err := h.stage.WithLogger(log).Do(ctx, msg.Key(), Fingerprint(msg), func(ctx context.Context, a idemstage.Attempt) ([]byte, error) {
		ran = true
		log = log.With("claim_attempt", a.Number)
		if a.TakeOver {
			h.Metrics.TakeOver()
			log.Warn("took over an expired lease")
			if err := h.Payments.RecordTakeover(ctx, msg.PaymentID, a.Number, h.Instance); err != nil {
				log.Error("takeover not recorded", "err", err)
			}
		}
		v = h.charge(ctx, log, msg)
		if v.result != nil {
			return v.result, nil
		}
		return nil, v.err
	})
	if ip, ok := errors.AsType[*idem.InProgressError](err); ok && !ran {
		log.Info("charge in progress elsewhere; retrying later", "retry_after", ip.RetryAfter.String())
		return metrics.InProgressRetry, consumer.Retry(err, ip.RetryAfter)
	}
	switch {
	case !ran && errors.Is(err, idem.ErrMismatch):
		log.Error("idempotency key already used for another payment", "err", err)
		return metrics.DeadLettered, consumer.Reject(err)
	case !ran && err != nil:
		// Redis unreachable, or full (idem.ErrFull, also ErrUnavailable:
		// err says which): the stage cannot be claimed, nothing is charged.
		log.Warn("boundary unavailable; not charging (fail closed)", "err", err)
		return metrics.RedisDown, consumer.Retry(err, 0)
	case !ran:
		log.Info("already charged (boundary)", "result", string(done.Result))
		return metrics.Duplicate, nil
	case v.result != nil && err != nil:
		// The database holds the outcome, the boundary does not (Redis did
		// not answer Complete). Acking would leave the stage PENDING until
		// the retention ends, since nothing else claims it again. The
		// delayed retry does: after the lease it takes the stage over,
		// finds the payment terminal and completes the stage from the row.
		log.Warn("stage not completed; delayed retry to complete it from the database", "err", err)
		return v.outcome, consumer.Retry(fmt.Errorf("complete charge stage of %s: %w", msg.PaymentID, err), 0)
	case v.result != nil:
		// Completed; or Complete found another owner (it completes the
		// stage from the database), which idemstage logged.
		return v.outcome, nil
	case errors.Is(err, idem.ErrLost):
		log.Warn("lease lost; nothing written", "cause", err)
		return metrics.LostLease, consumer.Retry(fmt.Errorf("charge %s: %w", msg.PaymentID, err), 0)
	case errors.Is(err, idemstage.ErrHoldExceeded):
		// The work was cut off (a blocked query, a slow psp) while the
		// lease was still ours: the stage is released, try again later.
		log.Warn("charge stage held past the maximum hold; releasing it, retrying later", "max_hold", h.MaxHold.String())
		return metrics.TransientRetry, consumer.Retry(fmt.Errorf("charge %s: %w", msg.PaymentID, idemstage.ErrHoldExceeded), 0)
	}
	return v.outcome, v.err // the stage is released
}

// charge is the stage's work, done under the lease: ctx ends, with cause
// idem.ErrLost, when the lease is lost, and nothing is written after that;
// it ends with cause idemstage.ErrHoldExceeded after MaxHold.
func (h *Handler) charge(ctx context.Context, log *slog.Logger, msg Initiated) verdict {
	p, err := h.Payments.Get(ctx, msg.PaymentID)
	switch {
	case lost(ctx):
		return verdict{err: context.Cause(ctx)}
	case errors.Is(err, payments.ErrNotFound):
		log.Error("payment does not exist; dead-lettering", "err", err)
		return verdict{outcome: metrics.DeadLettered, err: consumer.Reject(err)}
	case err != nil:
		log.Warn("database unavailable; retrying later", "err", err)
		return verdict{outcome: metrics.TransientRetry, err: consumer.Retry(err, 0)}
	}
	if err := agree(p, msg); err != nil {
		log.Error("message disagrees with the payment row; dead-lettering", "err", err)
		return verdict{outcome: metrics.DeadLettered, err: consumer.Reject(err)}
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
		return verdict{err: context.Cause(ctx)}
	}
	won, err := h.Payments.Settle(ctx, p.ID, o)
	switch {
	case lost(ctx):
		return verdict{err: context.Cause(ctx)}
	case err != nil:
		log.Warn("payment not settled; retrying later (the psp replays the charge)", "err", err)
		return verdict{outcome: metrics.TransientRetry, err: consumer.Retry(err, 0)}
	case !won:
		// Someone else settled it first: their outcome stands.
		if p, err = h.Payments.Get(ctx, p.ID); err != nil || !p.Terminal() {
			return verdict{outcome: metrics.TransientRetry, err: consumer.Retry(fmt.Errorf("re-read payment after a lost compare-and-set: %w", err), 0)}
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
		return payments.Outcome{}, verdict{err: context.Cause(ctx)}, false
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
	return payments.Outcome{}, verdict{outcome: metrics.TransientRetry, err: consumer.Retry(err, 0)}, false
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
