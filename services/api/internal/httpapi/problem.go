package httpapi

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemhttp"
	"github.com/oncepay/oncepay/services/api/internal/payments"
)

// problem is an RFC 9457 problem detail. As an error it carries its own
// status; problemFor turns every other error into one.
type problem struct {
	Type     string       `json:"type"`
	Title    string       `json:"title"`
	Status   int          `json:"status"`
	Detail   string       `json:"detail,omitempty"`
	Instance string       `json:"instance,omitempty"`
	Errors   []fieldError `json:"errors,omitempty"`

	header http.Header // extra response headers (Retry-After, Allow, WWW-Authenticate)
	// database: the answer to a request that failed because Postgres
	// could not be reached (databaseUnavailable).
	database bool
	// shed: a request refused for load (overloaded), expected under
	// overload and counted by metrics; it is not logged as a failure,
	// which would add a log line per refusal just when the api has the
	// least time for it.
	shed bool
}

// fieldError is one invalid part of the request: a body field (its JSON
// name; empty for the body as a whole) or a header.
type fieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (p *problem) Error() string { return fmt.Sprintf("%d %s: %s", p.Status, p.Title, p.Detail) }

// problemType is the prefix of every problem type URI; docs/api.md lists them.
const problemType = "urn:oncepay:api:problem:"

func newProblem(status int, slug, title, detail string) *problem {
	return &problem{Type: problemType + slug, Title: title, Status: status, Detail: detail}
}

func (p *problem) with(name, value string) *problem {
	if p.header == nil {
		p.header = http.Header{}
	}
	p.header.Add(name, value)
	return p
}

func invalidRequest(errs ...fieldError) *problem {
	p := newProblem(http.StatusBadRequest, "invalid-request", "Invalid request",
		fmt.Sprintf("%d invalid field(s); see errors", len(errs)))
	p.Errors = errs
	return p
}

// retryAfterFull is the Retry-After of the 503 that answers a new payment
// while the idempotency store is out of memory (idem.ErrFull).
const retryAfterFull = 5 * time.Second

// overloaded is the answer to a request shed for load, at the door
// (admit) or by the boundary's full queue (idem.ErrOverloaded): 503,
// nothing was done, Retry-After: 1.
func overloaded() *problem {
	p := newProblem(http.StatusServiceUnavailable, "unavailable", "Service unavailable",
		"the service is overloaded; nothing was done, retry later with the same key").
		with("Retry-After", "1")
	p.shed = true
	return p
}

// problemFor maps an error to the problem that answers it: the one place
// where errors become status codes.
func problemFor(err error) *problem {
	var (
		p          *problem
		inProgress *idem.InProgressError
		tooLarge   *http.MaxBytesError
	)
	switch {
	case errors.As(err, &p):
		return p
	case errors.Is(err, idemhttp.ErrNoKey):
		return newProblem(http.StatusBadRequest, "invalid-idempotency-key", "Invalid Idempotency-Key",
			"the Idempotency-Key header is required: 1-255 visible ASCII characters, unique per payment")
	case errors.Is(err, idemhttp.ErrManyKeys):
		return newProblem(http.StatusBadRequest, "invalid-idempotency-key", "Invalid Idempotency-Key",
			"send exactly one Idempotency-Key header")
	case errors.Is(err, idem.ErrInvalidKey):
		return invalidKey(err)
	case errors.As(err, &inProgress):
		secs := int(math.Ceil(inProgress.RetryAfter.Seconds()))
		return newProblem(http.StatusConflict, "in-progress", "Request in progress",
			"a request with this Idempotency-Key is being processed; retry after the Retry-After delay").
			with("Retry-After", strconv.Itoa(max(secs, 1)))
	case errors.Is(err, idem.ErrMismatch), errors.Is(err, payments.ErrKeyReused):
		return newProblem(http.StatusUnprocessableEntity, "idempotency-key-reused", "Idempotency key reused",
			"this Idempotency-Key was first used with a different request; use a new key for a new payment")
	case errors.Is(err, idem.ErrFull): // before ErrUnavailable, which it also matches
		// Redis refuses writes (maxmemory, noeviction): no new payment can
		// be claimed, so none is created. Replays still answer: they only
		// read. Memory frees as records expire or when Redis gets more, not
		// within a second, hence the longer Retry-After.
		return newProblem(http.StatusServiceUnavailable, "unavailable", "Service unavailable",
			"the idempotency store is out of memory; nothing was done, retry later with the same key").
			with("Retry-After", strconv.Itoa(int(retryAfterFull.Seconds())))
	case errors.Is(err, idem.ErrOverloaded): // before ErrUnavailable, which it also matches
		// The boundary's queue is full: the request was shed unsent, fast,
		// instead of waiting behind calls that would time out.
		return overloaded()
	case errors.Is(err, idem.ErrUnavailable):
		return newProblem(http.StatusServiceUnavailable, "unavailable", "Service unavailable",
			"the idempotency store is unreachable; nothing was done, retry later with the same key").
			with("Retry-After", "1")
	case dbUnavailable(err): // after the boundary's errors, whose causes may look alike
		return databaseUnavailable()
	case errors.Is(err, payments.ErrNotFound):
		return newProblem(http.StatusNotFound, "not-found", "Not found", "no such payment")
	case errors.As(err, &tooLarge):
		return newProblem(http.StatusRequestEntityTooLarge, "body-too-large", "Request body too large",
			fmt.Sprintf("the body must be at most %d bytes", tooLarge.Limit))
	}
	return newProblem(http.StatusInternalServerError, "internal", "Internal error",
		"the request failed unexpectedly; it is safe to retry with the same Idempotency-Key")
}

// writeError answers err as application/problem+json; 5xx errors other
// than refusals for load are logged, and answers for an unreachable
// database counted.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	p := *problemFor(err)
	p.Instance = r.URL.Path
	if p.database {
		s.metrics.PostgresUnavailable.Inc()
	}
	if p.Status >= 500 && !p.shed {
		s.log.ErrorContext(r.Context(), "request failed", "err", err, "status", p.Status,
			"request_id", infoFrom(r.Context()).id)
	}
	body, encErr := encodeJSON(p)
	if encErr != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	for name, values := range p.header {
		for _, v := range values {
			w.Header().Add(name, v)
		}
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_, _ = w.Write(body) // the client may be gone; nothing to answer
}

func (s *Server) notFound(http.ResponseWriter, *http.Request) error {
	return newProblem(http.StatusNotFound, "not-found", "Not found", "no such route")
}

func (s *Server) methodNotAllowed(_ http.ResponseWriter, r *http.Request) error {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if s.mux.Match(chi.NewRouteContext(), m, r.URL.Path) {
			allowed = append(allowed, m)
		}
	}
	return newProblem(http.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed",
		fmt.Sprintf("%s is not allowed here; allowed: %s", r.Method, strings.Join(allowed, ", "))).
		with("Allow", strings.Join(allowed, ", "))
}
