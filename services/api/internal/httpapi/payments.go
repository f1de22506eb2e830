package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/oncepay/oncepay/pkg/idem"
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
	var req createPaymentRequest
	body, err := decodeJSON(w, r, &req)
	if err != nil {
		return err
	}
	if errs := req.validate(); len(errs) > 0 {
		return invalidRequest(errs...)
	}
	scoped, err := idem.NewKey(merchant, key)
	if err != nil {
		return invalidKey(err)
	}
	fingerprint, err := idem.Fingerprint(r.Method, r.URL.Path, body)
	if err != nil {
		return invalidRequest(fieldError{Message: err.Error()})
	}
	p := payments.Payment{
		MerchantID: merchant, IdempotencyKey: key, Fingerprint: fingerprint,
		Amount: *req.Amount, Currency: *req.Currency, CustomerID: *req.CustomerID,
	}
	if req.Description != nil {
		p.Description = *req.Description
	}
	return s.idempotent(w, r, scoped, fingerprint, func(ctx context.Context, w http.ResponseWriter) error {
		return s.insertPayment(ctx, w, p)
	})
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
	if err != nil {
		return err
	}
	if created.Backstop {
		s.log.InfoContext(ctx, "answered by the database backstop", "payment_id", created.PaymentID,
			"merchant", p.MerchantID, "idempotency_key", p.IdempotencyKey)
		w.Header().Set(headerReplayed, "true")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/v1/payments/"+created.PaymentID)
	w.WriteHeader(created.Response.Status)
	_, _ = w.Write(created.Response.Body) // the client may be gone; nothing to answer
	return nil
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
