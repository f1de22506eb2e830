package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/service/trace"
	"github.com/oncepay/oncepay/services/api/internal/metrics"
	"github.com/oncepay/oncepay/services/api/internal/payments"
)

// createdJSON is the 202 answer to POST /v1/payments. It is computed before
// the insert and stored with the payment, so it never changes.
type createdJSON struct {
	ID          string    `json:"id"`
	MerchantID  string    `json:"merchant_id"`
	Status      string    `json:"status"`
	Amount      int64     `json:"amount"`
	Currency    string    `json:"currency"`
	CustomerID  string    `json:"customer_id"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
}

// paymentJSON is the answer to GET /v1/payments/{id}.
type paymentJSON struct {
	ID            string    `json:"id"`
	MerchantID    string    `json:"merchant_id"`
	Status        string    `json:"status"`
	Amount        int64     `json:"amount"`
	Currency      string    `json:"currency"`
	CustomerID    string    `json:"customer_id"`
	Description   string    `json:"description"`
	PSPChargeID   *string   `json:"psp_charge_id"`
	FailureReason *string   `json:"failure_reason"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// createPayment handles POST /v1/payments. The checks run in the order of
// the contract: authentication (middleware), Idempotency-Key syntax, then
// content type, size and body; only a valid request reaches the boundary,
// so rejected requests never touch Redis or Postgres.
func (s *Server) createPayment(w http.ResponseWriter, r *http.Request) error {
	merchant := merchantFrom(r.Context())
	key, err := idempotencyKey(r)
	if err != nil {
		return err
	}
	infoFrom(r.Context()).key = key
	if ctx := trace.WithKey(r.Context(), merchant, key); ctx != r.Context() { // tracing on
		r = r.WithContext(ctx)
	}
	var req createPaymentRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if errs := req.validate(); len(errs) > 0 {
		return invalidRequest(errs...)
	}
	scoped, err := idem.NewKey(merchant, key)
	if err != nil {
		return invalidKey(err)
	}
	canonical, err := req.canonical()
	if err != nil {
		return err
	}
	fingerprint, err := idem.Fingerprint(r.Method, r.URL.Path, canonical)
	if err != nil {
		return err
	}
	p := payments.Payment{
		MerchantID: merchant, IdempotencyKey: key, Fingerprint: fingerprint,
		Amount: *req.Amount, Currency: *req.Currency, CustomerID: *req.CustomerID,
	}
	if req.Description != nil {
		p.Description = *req.Description
	}
	err = s.idempotent(w, r, scoped, fingerprint, func(ctx context.Context, w http.ResponseWriter) error {
		return s.insertPayment(ctx, w, p)
	})
	if errors.Is(err, idem.ErrMismatch) {
		return s.answerMismatch(w, r, p, err)
	}
	return err
}

// answerMismatch answers a request whose key's api stage in Redis holds
// another fingerprint. Usually that is a key reused with another payload,
// and the answer is mismatch (a 422). But Redis is not the truth after a
// loss: while another request that reuses the key holds the stage (its
// backstop has not repaired it yet), or where a stage was recorded under
// such a request's fingerprint, this request may be the one whose payment
// holds the key. The database decides: if the key's payment was created
// from this request's fingerprint, its first answer is replayed. Only a
// read; when the database cannot be reached the answer is its 503 (it
// decides, and cannot now), on any other failure it stays mismatch.
func (s *Server) answerMismatch(w http.ResponseWriter, r *http.Request, p payments.Payment, mismatch error) error {
	h, err := s.payments.Holder(r.Context(), p.MerchantID, p.IdempotencyKey)
	if err != nil {
		if dbUnavailable(err) {
			return err
		}
		if !errors.Is(err, payments.ErrNotFound) {
			s.log.WarnContext(r.Context(), "boundary mismatch: could not read the key's payment", "err", err)
		}
		return mismatch
	}
	if h.Fingerprint != p.Fingerprint {
		return mismatch
	}
	s.log.InfoContext(r.Context(), "boundary mismatch, but the key's payment is this request's; the database backstop answers",
		"payment_id", h.PaymentID, "merchant", p.MerchantID, "idempotency_key", p.IdempotencyKey)
	s.metrics.PaymentsBackstop.WithLabelValues(metrics.BackstopReplayed).Inc()
	w.Header().Set(headerReplayed, "true")
	send(w, createdAnswer(h.PaymentID, h.Response))
	return nil
}

// insertPayment creates the payment, or lets the database backstop answer,
// and writes the answer: 202, Location and the stored body.
func (s *Server) insertPayment(ctx context.Context, w http.ResponseWriter, p payments.Payment) error {
	p, err := payments.Pending(p, time.Now())
	if err != nil {
		return err
	}
	body, err := encodeJSON(createdJSON{
		ID: p.ID, MerchantID: p.MerchantID, Status: p.Status, Amount: p.Amount, Currency: p.Currency,
		CustomerID: p.CustomerID, Description: p.Description, CreatedAt: p.CreatedAt,
	})
	if err != nil {
		return err
	}
	created, err := s.payments.Create(ctx, p, payments.Response{Status: http.StatusAccepted, Body: body})
	var reused *payments.KeyReusedError
	if errors.As(err, &reused) {
		s.log.InfoContext(ctx, "key held by another request; the database backstop answers 422",
			"payment_id", reused.PaymentID, "merchant", p.MerchantID, "idempotency_key", p.IdempotencyKey)
		return &heldByAnother{fingerprint: reused.Fingerprint, answer: createdAnswer(reused.PaymentID, reused.Response), err: err}
	}
	if err != nil {
		return err
	}
	if created.Backstop {
		s.log.InfoContext(ctx, "answered by the database backstop", "payment_id", created.PaymentID,
			"merchant", p.MerchantID, "idempotency_key", p.IdempotencyKey)
		w.Header().Set(headerReplayed, "true")
	}
	if created.Published != nil {
		// Under the boundary the recorder waits for the confirm while
		// the stage is ended (idempotent); elsewhere it is waited for
		// here.
		if rec, ok := w.(*recorder); ok {
			rec.published = created.Published
		} else {
			created.Published()
		}
	}
	send(w, createdAnswer(created.PaymentID, created.Response))
	return nil
}

// createdAnswer is the answer that created payment id: its stored first
// response, as JSON, with its Location.
func createdAnswer(id string, first payments.Response) idem.Response {
	return idem.Response{
		Status: first.Status,
		Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/v1/payments/" + id}},
		Body:   first.Body,
	}
}

// idempotencyKey returns the request's Idempotency-Key, unquoted.
func idempotencyKey(r *http.Request) (string, error) {
	values := r.Header.Values("Idempotency-Key")
	switch len(values) {
	case 0:
		return "", newProblem(http.StatusBadRequest, "invalid-idempotency-key", "Invalid Idempotency-Key",
			"the Idempotency-Key header is required: 1-255 visible ASCII characters, unique per payment")
	case 1:
	default:
		return "", newProblem(http.StatusBadRequest, "invalid-idempotency-key", "Invalid Idempotency-Key",
			"send exactly one Idempotency-Key header")
	}
	key, err := idem.ParseKey(values[0])
	if err != nil {
		return "", invalidKey(err)
	}
	return key, nil
}

func invalidKey(err error) *problem {
	p := newProblem(http.StatusBadRequest, "invalid-idempotency-key", "Invalid Idempotency-Key",
		"the Idempotency-Key must be 1-255 visible ASCII characters")
	p.Errors = []fieldError{{Field: "Idempotency-Key", Message: err.Error()}}
	return p
}

// getPayment handles GET /v1/payments/{id}: the merchant's own payments
// only; another merchant's is 404, like an unknown id.
func (s *Server) getPayment(w http.ResponseWriter, r *http.Request) error {
	p, err := s.payments.Get(r.Context(), merchantFrom(r.Context()), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, paymentJSON{
		ID: p.ID, MerchantID: p.MerchantID, Status: p.Status, Amount: p.Amount, Currency: p.Currency,
		CustomerID: p.CustomerID, Description: p.Description, PSPChargeID: p.PSPChargeID,
		FailureReason: p.FailureReason, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt,
	})
}
