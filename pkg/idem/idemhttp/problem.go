package idemhttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/oncepay/oncepay/pkg/idem"
)

// Errors the middleware answers with, besides idem's (ErrInvalidKey,
// ErrMismatch, *InProgressError, ErrUnavailable, ErrFull, ErrOverloaded).
var (
	// ErrNoKey: a covered request without an Idempotency-Key header.
	ErrNoKey = errors.New("idemhttp: the Idempotency-Key header is required")
	// ErrManyKeys: more than one Idempotency-Key header.
	ErrManyKeys = errors.New("idemhttp: send exactly one Idempotency-Key header")
)

// ProblemType prefixes the type URI of every problem WriteProblem writes;
// the suffixes are stable: invalid-idempotency-key (400), body-too-large
// (413), in-progress (409), idempotency-key-reused (422), unavailable
// (503) and internal (500).
const ProblemType = "urn:oncepay:idem:problem:"

// Problem is an RFC 9457 problem detail.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// RetryAfter, if positive, is sent as the Retry-After header (seconds).
	RetryAfter int `json:"-"`
}

// retryAfterFull is the Retry-After while the store is out of memory:
// memory frees as records expire, not within a second.
const retryAfterFull = 5

// ProblemFor maps an error of the middleware to its problem.
func ProblemFor(err error) Problem {
	var (
		inProgress *idem.InProgressError
		tooLarge   *http.MaxBytesError
	)
	p := func(status int, slug, title, detail string) Problem {
		return Problem{Type: ProblemType + slug, Title: title, Status: status, Detail: detail}
	}
	switch {
	case errors.Is(err, ErrNoKey), errors.Is(err, ErrManyKeys), errors.Is(err, idem.ErrInvalidKey):
		return p(http.StatusBadRequest, "invalid-idempotency-key", "Invalid Idempotency-Key", err.Error())
	case errors.As(err, &tooLarge):
		return p(http.StatusRequestEntityTooLarge, "body-too-large", "Request body too large",
			fmt.Sprintf("the body must be at most %d bytes", tooLarge.Limit))
	case errors.As(err, &inProgress):
		q := p(http.StatusConflict, "in-progress", "Request in progress",
			"a request with this Idempotency-Key is being processed; retry after the Retry-After delay")
		q.RetryAfter = max(int(math.Ceil(inProgress.RetryAfter.Seconds())), 1)
		return q
	case errors.Is(err, idem.ErrMismatch):
		return p(http.StatusUnprocessableEntity, "idempotency-key-reused", "Idempotency key reused",
			"this Idempotency-Key was first used with a different request; use a new key for a new request")
	case errors.Is(err, idem.ErrFull): // before ErrUnavailable, which it also matches
		q := p(http.StatusServiceUnavailable, "unavailable", "Service unavailable",
			"the idempotency store is out of memory; nothing was done, retry later with the same key")
		q.RetryAfter = retryAfterFull
		return q
	case errors.Is(err, idem.ErrOverloaded): // before ErrUnavailable, which it also matches
		q := p(http.StatusServiceUnavailable, "unavailable", "Service unavailable",
			"the service is overloaded; nothing was done, retry later with the same key")
		q.RetryAfter = 1
		return q
	case errors.Is(err, idem.ErrUnavailable):
		q := p(http.StatusServiceUnavailable, "unavailable", "Service unavailable",
			"the idempotency store is unreachable; nothing was done, retry later with the same key")
		q.RetryAfter = 1
		return q
	}
	return p(http.StatusInternalServerError, "internal", "Internal error",
		"the request failed unexpectedly; it is safe to retry with the same Idempotency-Key")
}

// WriteProblem is the default Config.Error: it answers err as
// application/problem+json (ProblemFor).
func WriteProblem(w http.ResponseWriter, _ *http.Request, err error) {
	p := ProblemFor(err)
	body, _ := json.Marshal(p) // strings and ints only: cannot fail
	if p.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_, _ = w.Write(body) // the client may be gone; nothing to answer
}
