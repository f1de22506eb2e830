package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemhttp"
	"github.com/oncepay/oncepay/pkg/service/trace"
	"github.com/oncepay/oncepay/services/api/internal/metrics"
	"github.com/oncepay/oncepay/services/api/internal/payments"
)

// stageAPI is the api's stage in the boundary hash.
const stageAPI = "api"

// headerReplayed marks an answer that was given before, from Redis or from
// the database backstop.
const headerReplayed = idemhttp.HeaderReplayed

// idempotency is the boundary around payment creation: the library's
// middleware (pkg/idem/idemhttp) with the api's configuration. Keys are
// scoped to the merchant; the fingerprint is createFingerprint's (the
// request is decoded and validated first, so an invalid request never
// touches Redis); the answers stored are the status, Content-Type,
// Location and body; the database is the durable backstop (backstop,
// and insertPayment's idemhttp.CompleteAs).
func (s *Server) idempotency(d Deps) func(http.Handler) http.Handler {
	return idemhttp.New(idemhttp.Config{
		Boundary:      httpBoundary(d.Boundary, d.WorkTimeout),
		Stage:         stageAPI,
		Scope:         func(r *http.Request) (string, error) { return merchantFrom(r.Context()), nil },
		WithKey:       withKey,
		Fingerprint:   s.createFingerprint,
		Methods:       []string{http.MethodPost},
		StoredHeaders: []string{"Content-Type", "Location"},
		Retention:     d.Retention,
		Backstop:      s.backstop,
		EndRetry:      d.EndRetry,
		OnEndRetry: func(op idem.Op, outcome string) {
			s.metrics.IdemLeaseEndRetries.WithLabelValues(string(op), outcome).Inc()
		},
		Error:  s.writeError,
		Logger: s.log,
	})
}

// withKey puts the request's key into its access log line and, with
// tracing on, on every span of the request from the boundary's on.
func withKey(r *http.Request, k idem.Key) *http.Request {
	infoFrom(r.Context()).key = k.ID()
	if ctx := trace.WithKey(r.Context(), k.Merchant(), k.ID()); ctx != r.Context() { // tracing on
		return r.WithContext(ctx)
	}
	return r
}

// createFingerprint decodes and validates a POST /v1/payments body (the
// checks of the contract after the key: content type, size, body) and
// returns the fingerprint of its canonical form: method, path and the
// canonical request, as stored with the payment.
func (s *Server) createFingerprint(r *http.Request) (string, error) {
	req, err := decodeCreate(r)
	if err != nil {
		return "", err
	}
	canonical, err := req.canonical()
	if err != nil {
		return "", err
	}
	return idem.Fingerprint(r.Method, r.URL.Path, canonical)
}

// decodeCreate decodes and validates a POST /v1/payments body.
func decodeCreate(r *http.Request) (createPaymentRequest, error) {
	var req createPaymentRequest
	if err := decodeJSON(nil, r, &req); err != nil {
		return req, err
	}
	if errs := req.validate(); len(errs) > 0 {
		return req, invalidRequest(errs...)
	}
	return req, nil
}

// backstop answers a request whose key's api stage in Redis holds another
// fingerprint. Usually that is a key reused with another payload, and the
// answer is mismatch (a 422). But Redis is not the truth after a loss:
// while another request that reuses the key holds the stage (its backstop
// has not repaired it yet), or where a stage was recorded under such a
// request's fingerprint, this request may be the one whose payment holds
// the key. The database decides: if the key's payment was created from
// this request's fingerprint, its first answer is replayed. Only a read.
// When the database cannot be reached it cannot decide: the error is the
// answer (a 503: retry later), not a 422 that may be wrong. On any other
// failure of the read the answer stays mismatch.
func (s *Server) backstop(ctx context.Context, _ *http.Request, k idem.Key, fingerprint string) (idem.Response, bool, error) {
	h, err := s.payments.Holder(ctx, k.Merchant(), k.ID())
	if errors.Is(err, payments.ErrNotFound) {
		return idem.Response{}, false, nil
	}
	if err != nil {
		if dbUnavailable(err) {
			return idem.Response{}, false, fmt.Errorf("read the key's payment: %w", err)
		}
		s.log.WarnContext(ctx, "boundary mismatch: could not read the key's payment", "err", err)
		return idem.Response{}, false, nil
	}
	if h.Fingerprint != fingerprint {
		return idem.Response{}, false, nil
	}
	s.log.InfoContext(ctx, "boundary mismatch, but the key's payment is this request's; the database backstop answers",
		"payment_id", h.PaymentID, "merchant", k.Merchant(), "idempotency_key", k.ID())
	s.metrics.PaymentsBackstop.WithLabelValues(metrics.BackstopReplayed).Inc()
	return createdAnswer(h.PaymentID, h.Response), true, nil
}
