package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemhttp"
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

// createPayment handles POST /v1/payments under the boundary
// (idempotency): authentication, the Idempotency-Key, content type, size
// and body were checked before, in the order of the contract, so only a
// valid request gets here, and it runs at most once per key. ctx is
// detached from the client and ends at the lease's deadline.
func (s *Server) createPayment(w http.ResponseWriter, r *http.Request) error {
	claimed, ok := idemhttp.FromContext(r.Context())
	if !ok {
		return errors.New("createPayment: not under the idempotency middleware")
	}
	req, err := decodeCreate(r)
	if err != nil {
		return err
	}
	p := payments.Payment{
		MerchantID: claimed.Key.Merchant(), IdempotencyKey: claimed.Key.ID(), Fingerprint: claimed.Fingerprint,
		Amount: *req.Amount, Currency: *req.Currency, CustomerID: *req.CustomerID,
	}
	if req.Description != nil {
		p.Description = *req.Description
	}
	return s.insertPayment(r.Context(), w, p)
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
		// The stage is repaired to the holder: its retries replay its
		// answer, every other payload gets 422 (idemhttp.CompleteAs).
		idemhttp.CompleteAs(w, reused.Fingerprint, createdAnswer(reused.PaymentID, reused.Response))
		return err
	}
	if err != nil {
		return err
	}
	if created.Backstop {
		s.log.InfoContext(ctx, "answered by the database backstop", "payment_id", created.PaymentID,
			"merchant", p.MerchantID, "idempotency_key", p.IdempotencyKey)
		w.Header().Set(headerReplayed, "true")
	}
	// Under the boundary the confirm is waited for while the stage is
	// ended (idemhttp.AfterEnd), so the two round trips overlap.
	if created.Published != nil && !idemhttp.AfterEnd(w, created.Published) {
		created.Published()
	}
	send(w, createdAnswer(created.PaymentID, created.Response))
	return nil
}

// send writes an answer.
func send(w http.ResponseWriter, a idem.Response) {
	for name, values := range a.Header {
		w.Header()[name] = values
	}
	w.WriteHeader(a.Status)
	_, _ = w.Write(a.Body) // the client may be gone; nothing to answer
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
