package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/oncepay/oncepay/services/psp/internal/charge"
	"github.com/oncepay/oncepay/services/psp/internal/faults"
	"github.com/oncepay/oncepay/services/psp/internal/ledger"
)

// chargeStore is the ledger as POST /v1/charges uses it.
type chargeStore interface {
	Charge(ctx context.Context, a ledger.Attempt) (ledger.Result, error)
	RecordCall(ctx context.Context, c ledger.Call) error
}

// handleCharge serves POST /v1/charges. In order: validate (400/413/415,
// outcome invalid), draw the call's fault plan, sleep its latency (outcome
// cancelled if the caller leaves), inject fail_before (503) or error (500),
// then charge, or for reject a permanent rejection, in one transaction
// (see ledger.Store.Charge) and answer: 201 charged, 402 declined, 400
// charge-rejected, the stored answer with Idempotent-Replayed: true, 422
// mismatch, or, for fail_after, no answer at all.
func handleCharge(log *slog.Logger, store chargeStore, inj *faults.Injector, m *Metrics) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := ledger.Call{ReceivedAt: time.Now()}
		record := func(outcome charge.Outcome, status int) {
			call.Outcome = outcome
			if status != 0 {
				call.HTTPStatus = new(int32(status)) // #nosec G115 -- an HTTP status (100-599) fits int32
			}
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
			defer cancel()
			if err := store.RecordCall(ctx, call); err != nil {
				requestLog(r, log).Error("ledger: call not recorded", "outcome", outcome, "err", err)
				return
			}
			m.call(outcome)
		}

		key, req, err := decodeCharge(w, r, &call)
		if err != nil {
			status := http.StatusInternalServerError
			if p, ok := errors.AsType[*problem](err); ok {
				status = p.Status
			}
			record(charge.OutcomeInvalid, status)
			writeError(w, r, log, err)
			return
		}

		plan := inj.Draw()
		if !sleep(r.Context(), plan.Delay) {
			record(charge.OutcomeCancelled, 0)
			return
		}
		switch {
		case plan.FailBefore:
			record(charge.OutcomeFailBefore, http.StatusServiceUnavailable)
			writeError(w, r, log, simulatedOutage())
			return
		case plan.Error:
			record(charge.OutcomeError, http.StatusInternalServerError)
			writeError(w, r, log, simulatedError())
			return
		}

		c := charge.New(req, time.Now())
		status := http.StatusCreated
		if !c.Effective() {
			status = http.StatusPaymentRequired
		}
		body, err := marshal(c)
		if plan.Reject {
			c, status = charge.Charge{}, http.StatusBadRequest
			body, err = marshal(chargeRejected(requestIDFrom(r.Context())))
		}
		if err != nil {
			record(charge.OutcomeError, http.StatusInternalServerError)
			writeError(w, r, log, err)
			return
		}
		res, err := store.Charge(r.Context(), ledger.Attempt{
			ReceivedAt: call.ReceivedAt, Key: key, Request: req,
			Charge: c, HTTPStatus: status, Body: body,
			Idempotency: plan.Idempotency, FailAfter: plan.FailAfter, Rejected: plan.Reject,
		})
		if err != nil {
			record(charge.OutcomeError, http.StatusInternalServerError)
			writeError(w, r, log, err)
			return
		}
		m.call(res.Outcome)
		switch res.Outcome {
		case charge.OutcomeFailAfter:
			requestLog(r, log).Info("fail_after: charged, dropping the connection", "charge_id", res.ChargeID, "reference", req.Reference)
			dropConnection(w)
		case charge.OutcomeMismatch:
			writeError(w, r, log, keyMismatch())
		case charge.OutcomeReplayed:
			w.Header().Set("Idempotent-Replayed", "true")
			writeBody(w, res.HTTPStatus, contentType(res.HTTPStatus), res.Body)
		default:
			writeBody(w, res.HTTPStatus, contentType(res.HTTPStatus), res.Body)
		}
	})
}

// decodeCharge reads and validates the Idempotency-Key header and the body,
// reporting every problem at once. It fills call with whatever was valid, for
// the ledger.
func decodeCharge(w http.ResponseWriter, r *http.Request, call *ledger.Call) (string, charge.Request, error) {
	var errs []fieldError
	keys := r.Header.Values("Idempotency-Key")
	key := ""
	if len(keys) > 0 {
		key = keys[0]
	}
	switch msg := charge.KeyProblem(key); {
	case len(keys) > 1:
		errs = append(errs, fieldError{Field: "Idempotency-Key", In: "header", Detail: "must be sent once"})
	case msg != "":
		errs = append(errs, fieldError{Field: "Idempotency-Key", In: "header", Detail: msg})
	default:
		call.IdempotencyKey = &key
	}
	req, bodyErrs, jsonOK, err := decode[charge.Request](w, r)
	if err != nil {
		return "", charge.Request{}, err
	}
	if jsonOK {
		bad := func(field string) bool {
			return slices.ContainsFunc(bodyErrs, func(e fieldError) bool { return e.Field == field })
		}
		if !bad("reference") {
			call.Reference = &req.Reference
		}
		if !bad("amount") {
			call.Amount = &req.Amount
		}
		if !bad("currency") {
			call.Currency = &req.Currency
		}
	}
	if errs = append(errs, bodyErrs...); len(errs) > 0 {
		return "", charge.Request{}, invalidRequest(errs)
	}
	return key, req, nil
}

// contentType is the media type of a stored answer: a charge or decline,
// or a rejection's problem.
func contentType(status int) string {
	if status >= 400 && status != http.StatusPaymentRequired {
		return "application/problem+json"
	}
	return "application/json"
}

// sleep waits d, or less if ctx ends first; it reports whether it waited d.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// dropConnection closes the client's connection without answering, so the
// caller sees a transport error. Where the connection cannot be hijacked
// (HTTP/2), the server is asked to abort the request instead.
func dropConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}
