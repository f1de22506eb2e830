package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/services/api/internal/payments"
)

// TestProblemFor pins the one mapping from errors to status codes.
func TestProblemFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		err            error
		wantStatus     int
		wantType       string
		wantRetryAfter string
	}{
		{"in progress, rounded up", fmt.Errorf("begin: %w", &idem.InProgressError{RetryAfter: 2100 * time.Millisecond}),
			http.StatusConflict, "in-progress", "3"},
		{"in progress, at least 1s", &idem.InProgressError{RetryAfter: 5 * time.Millisecond},
			http.StatusConflict, "in-progress", "1"},
		{"boundary mismatch", fmt.Errorf("begin: %w", idem.ErrMismatch), http.StatusUnprocessableEntity, "idempotency-key-reused", ""},
		{"backstop mismatch", fmt.Errorf("create: %w", payments.ErrKeyReused), http.StatusUnprocessableEntity, "idempotency-key-reused", ""},
		{"redis unavailable", fmt.Errorf("begin: %w: %w", idem.ErrUnavailable, errors.New("dial tcp: refused")),
			http.StatusServiceUnavailable, "unavailable", "1"},
		{"redis out of memory", fmt.Errorf("idem: begin k: %w: %w", idem.ErrFull, errors.New("OOM command not allowed when used memory > 'maxmemory'")),
			http.StatusServiceUnavailable, "unavailable", "5"},
		{"postgres shutting down", fmt.Errorf("create payment: %w", &pgconn.PgError{Code: "57P01"}),
			http.StatusServiceUnavailable, "unavailable", "1"},
		{"postgres pool acquire timed out", fmt.Errorf("get payment: %w", context.DeadlineExceeded),
			http.StatusServiceUnavailable, "unavailable", "1"},
		{"postgres constraint", fmt.Errorf("create payment: %w", &pgconn.PgError{Code: "23514"}),
			http.StatusInternalServerError, "internal", ""},
		{"not found", fmt.Errorf("get: %w", payments.ErrNotFound), http.StatusNotFound, "not-found", ""},
		{"body too large", &http.MaxBytesError{Limit: maxBodyBytes}, http.StatusRequestEntityTooLarge, "body-too-large", ""},
		{"a problem is itself", invalidRequest(fieldError{"amount", "is required"}), http.StatusBadRequest, "invalid-request", ""},
		{"anything else", errors.New("connection reset"), http.StatusInternalServerError, "internal", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := problemFor(tt.err)
			if p.Status != tt.wantStatus || p.Type != problemType+tt.wantType {
				t.Errorf("problemFor(%v) = %d %s, want %d %s", tt.err, p.Status, p.Type, tt.wantStatus, problemType+tt.wantType)
			}
			if got := p.header.Get("Retry-After"); got != tt.wantRetryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tt.wantRetryAfter)
			}
		})
	}
}

// TestProblemForNamesAFullStore: the 503 for an out-of-memory idempotency
// store (idem.ErrFull, which also matches idem.ErrUnavailable) says so,
// rather than calling the store unreachable.
func TestProblemForNamesAFullStore(t *testing.T) {
	t.Parallel()
	full := problemFor(fmt.Errorf("idem: begin k: %w: %w", idem.ErrFull, errors.New("OOM command not allowed when used memory > 'maxmemory'")))
	if !strings.Contains(full.Detail, "out of memory") || strings.Contains(full.Detail, "unreachable") {
		t.Errorf("full store: detail %q, want it to name the store out of memory", full.Detail)
	}
	down := problemFor(fmt.Errorf("begin: %w: %w", idem.ErrUnavailable, errors.New("dial tcp: refused")))
	if !strings.Contains(down.Detail, "unreachable") {
		t.Errorf("unreachable store: detail %q", down.Detail)
	}
	shed := problemFor(fmt.Errorf("begin: %w", idem.ErrOverloaded))
	if shed.Status != http.StatusServiceUnavailable || shed.header.Get("Retry-After") != "1" ||
		!strings.Contains(shed.Detail, "overloaded") || strings.Contains(shed.Detail, "unreachable") {
		t.Errorf("shed: %d Retry-After %q detail %q, want 503, 1 and the service named overloaded",
			shed.Status, shed.header.Get("Retry-After"), shed.Detail)
	}
}

func TestRecorderKeepsOnlyStoredHeaders(t *testing.T) {
	t.Parallel()
	rec := &recorder{header: http.Header{}}
	rec.Header().Set("Content-Type", "application/json")
	rec.Header().Set("Location", "/v1/payments/pay_1")
	rec.Header().Set("X-Request-Id", "abc")
	rec.WriteHeader(http.StatusAccepted)
	rec.WriteHeader(http.StatusInternalServerError) // ignored, like net/http
	rec.Write([]byte(`{"id":"pay_1"}`))
	got := rec.response()
	if got.Status != http.StatusAccepted || string(got.Body) != `{"id":"pay_1"}` || len(got.Header) != 2 ||
		got.Header.Get("Location") != "/v1/payments/pay_1" {
		t.Errorf("response() = %+v", got)
	}
}
