// Package httpapi is the api's HTTP interface: routing, authentication,
// request decoding and validation, the idempotency boundary around payment
// creation, problem+json errors. Its health and metrics endpoints are on
// the ops listener (pkg/service/ops), never here.
//
// Decoding (decodeJSON), validation (createPaymentRequest.validate),
// encoding (encodeJSON) and mapping errors to status codes (problemFor) each
// live in exactly one function.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/oncepay/oncepay/services/api/internal/metrics"
	"github.com/oncepay/oncepay/services/api/internal/payments"
	"golang.org/x/sync/semaphore"
)

// Keyring finds the merchant that owns an API key (auth.Keyring).
type Keyring interface {
	Lookup(apiKey string) (merchant string, ok bool)
}

// PaymentStore is the system of record (payments.Store).
type PaymentStore interface {
	Create(ctx context.Context, p payments.Payment, first payments.Response) (payments.Created, error)
	Get(ctx context.Context, merchant, id string) (payments.Payment, error)
	Holder(ctx context.Context, merchant, key string) (payments.Holder, error)
}

// Deps are the dependencies of the HTTP server. All but RateLimits and
// MaxInFlight are required.
type Deps struct {
	Logger   *slog.Logger
	Keys     Keyring
	Boundary Boundary
	Payments PaymentStore
	Metrics  *metrics.Metrics
	// RateLimits, if not nil, limits each merchant's requests (429).
	RateLimits *RateLimits
	// MaxInFlight, if positive, bounds the requests in flight on the
	// payment routes; past it a request is refused at once with 503
	// (admit).
	MaxInFlight int
	// WorkTimeout bounds the work done under a lease of the teaching
	// build's strategies (boundary_compare.go), counted from before their
	// Begin; use the lease length. oncepay's boundary needs none: the work
	// ends at the lease's own deadline (idem.Lease.Deadline).
	WorkTimeout time.Duration
	// Retention is advertised to clients (Idempotency-Key-Retention): the
	// boundary's retention in Redis; the database answers replays longer.
	Retention time.Duration
	// EndRetry is how long a request retries, before it answers, the
	// Complete or Release of its stage that Redis did not answer (zero:
	// no retry; the answer is sent and the stage stays PENDING).
	EndRetry time.Duration
}

// Server is the api's http.Handler.
type Server struct {
	mux      *chi.Mux
	log      *slog.Logger
	keys     Keyring
	boundary Boundary
	payments PaymentStore
	metrics  *metrics.Metrics
	limits   *RateLimits
	inFlight *semaphore.Weighted             // admit's slots; nil: no bound
	idem     func(http.Handler) http.Handler // the boundary (idempotency)
}

// NewServer returns the api's handler with every route of routes.go.
func NewServer(d Deps) http.Handler {
	s := &Server{
		mux:      chi.NewRouter(),
		log:      d.Logger,
		keys:     d.Keys,
		boundary: d.Boundary,
		payments: d.Payments,
		metrics:  d.Metrics,
		limits:   d.RateLimits,
		inFlight: newInFlight(d.MaxInFlight),
	}
	s.idem = s.idempotency(d)
	s.routes()
	return s
}

// ServeHTTP dispatches to the router.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// handlerFunc is a handler that returns its error instead of writing it;
// handle writes it as a problem.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (s *Server) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}
}
