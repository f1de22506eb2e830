package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
)

// problem is an RFC 9457 problem detail; as an error it carries its own status.
type problem struct {
	Type      string       `json:"type"`
	Title     string       `json:"title"`
	Status    int          `json:"status"`
	Detail    string       `json:"detail,omitempty"`
	Errors    []fieldError `json:"errors,omitempty"`
	RequestID string       `json:"request_id,omitempty"`
}

// fieldError is one invalid input: a body field (In "body", Field the JSON
// name, empty when the body as a whole is unusable), a header (In "header",
// Field the header name) or a query parameter (In "query").
type fieldError struct {
	Field  string `json:"field,omitempty"`
	In     string `json:"in"`
	Detail string `json:"detail"`
}

func (p *problem) Error() string {
	if p.Detail == "" {
		return fmt.Sprintf("%d %s", p.Status, p.Title)
	}
	return fmt.Sprintf("%d %s: %s", p.Status, p.Title, p.Detail)
}

const problemBase = "urn:oncepay:psp:problem:"

func invalidRequest(errs []fieldError) *problem {
	return &problem{Type: problemBase + "invalid-request", Title: "Invalid request", Status: http.StatusBadRequest,
		Detail: fmt.Sprintf("%d invalid input(s); see errors", len(errs)), Errors: errs}
}

func tooLarge(limit int) *problem {
	return &problem{Type: problemBase + "body-too-large", Title: "Request body too large", Status: http.StatusRequestEntityTooLarge,
		Detail: fmt.Sprintf("the body must be at most %d bytes", limit)}
}

func unreadableBody(err error) *problem {
	return &problem{Type: problemBase + "unreadable-body", Title: "Unreadable request body", Status: http.StatusBadRequest,
		Detail: err.Error()}
}

func unsupportedMediaType(ct string) *problem {
	return &problem{Type: problemBase + "unsupported-media-type", Title: "Unsupported media type", Status: http.StatusUnsupportedMediaType,
		Detail: fmt.Sprintf("Content-Type %q: the body must be application/json", ct)}
}

func keyMismatch() *problem {
	return &problem{Type: problemBase + "idempotency-key-mismatch", Title: "Idempotency key reused with a different payload", Status: http.StatusUnprocessableEntity,
		Detail: "this Idempotency-Key was first used with a different request body; use a new key for a new charge"}
}

func simulatedOutage() *problem {
	return &problem{Type: problemBase + "simulated-outage", Title: "Service unavailable", Status: http.StatusServiceUnavailable,
		Detail: "injected fault (fail_before_rate): nothing was charged; retry with the same key"}
}

func simulatedError() *problem {
	return &problem{Type: problemBase + "simulated-error", Title: "Internal server error", Status: http.StatusInternalServerError,
		Detail: "injected fault (error_rate): nothing was charged; retry with the same key"}
}

// chargeRejected is the answer to a call the reject fault rejects for
// good, with the request id of that call (the answer is stored and
// replayed byte for byte).
func chargeRejected(requestID string) *problem {
	return &problem{Type: problemBase + "charge-rejected", Title: "Charge rejected", Status: http.StatusBadRequest,
		Detail:    "injected fault (reject_rate): the provider refuses this charge for good; nothing was charged and the same key gets this answer again",
		RequestID: requestID}
}

func noSuchKey() *problem {
	return &problem{Type: problemBase + "no-such-key", Title: "No charge under this key", Status: http.StatusNotFound,
		Detail: "nothing was charged or declined under this Idempotency-Key"}
}

func unauthorized() *problem {
	return &problem{Type: problemBase + "unauthorized", Title: "Unauthorized", Status: http.StatusUnauthorized,
		Detail: "the admin endpoints need Authorization: Bearer <PSP_ADMIN_TOKEN>"}
}

func notFound() *problem {
	return &problem{Type: "about:blank", Title: "Not Found", Status: http.StatusNotFound}
}

func methodNotAllowed() *problem {
	return &problem{Type: "about:blank", Title: "Method Not Allowed", Status: http.StatusMethodNotAllowed}
}

// writeError is the one place errors become answers: a *problem is sent as
// it is; anything else is logged and answered as an opaque 500.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	p, ok := errors.AsType[*problem](err)
	if !ok {
		requestLog(r, log).Error("internal error", "err", err)
		p = &problem{Type: problemBase + "internal", Title: "Internal server error", Status: http.StatusInternalServerError,
			Detail: "unexpected error; nothing is known to have been charged unless the ledger says so"}
	}
	answer := *p
	answer.RequestID = requestIDFrom(r.Context())
	if answer.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	b, merr := marshal(answer)
	if merr != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	writeBody(w, answer.Status, "application/problem+json", b)
}

// errPanic stands for a recovered panic in writeError's log line.
var errPanic = errors.New("handler panicked")
