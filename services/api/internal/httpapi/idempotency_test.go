package httpapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
)

// hangUpBoundary is a Boundary whose Begin sees the client hang up while
// it waits for Redis, and then does what a Redis client that honours
// cancellation does: it gives up on the caller's side, although Redis may
// still run the script and leave a claim nobody owns.
type hangUpBoundary struct {
	hangUp context.CancelFunc
	lease  *endLease
}

func (b *hangUpBoundary) Begin(ctx context.Context, _ idem.Key, _, _ string) (Claim, error) {
	b.hangUp()
	select {
	case <-ctx.Done():
		return Claim{}, fmt.Errorf("begin: %w: %w", idem.ErrUnavailable, ctx.Err())
	case <-time.After(10 * time.Millisecond): // Redis answered
	}
	return Claim{Outcome: idem.Acquired, Lease: b.lease}, nil
}

// endLease records how a lease was ended.
type endLease struct {
	completed []byte
	released  bool
}

func (l *endLease) Complete(ctx context.Context, result []byte) error {
	l.completed = result
	return nil
}

func (l *endLease) Release(context.Context) error {
	l.released = true
	return nil
}

// TestBeginIsDetachedFromTheClient: a client that hangs up while Begin
// waits must not cancel Begin: the claim Redis makes is then owned by the
// request, whose work runs and whose answer is stored, so the client's
// retry is a replay and not a 409 for a whole lease.
func TestBeginIsDetachedFromTheClient(t *testing.T) {
	t.Parallel()
	ctx, hangUp := context.WithCancel(context.Background())
	b := &hangUpBoundary{hangUp: hangUp, lease: &endLease{}}
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil)), boundary: b, workTimeout: time.Second}
	key, err := idem.NewKey("m", "k")
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/payments", nil)
	w := httptest.NewRecorder()
	worked := false
	err = s.idempotent(w, r, key, "fp", func(ctx context.Context, w http.ResponseWriter) error {
		worked = true
		w.WriteHeader(http.StatusAccepted)
		return nil
	})
	if err != nil {
		t.Fatalf("idempotent = %v, want nil: Begin ran on the client's context", err)
	}
	if !worked || b.lease.completed == nil || b.lease.released {
		t.Errorf("worked %v, completed %q, released %v; want the work run and its answer stored", worked, b.lease.completed, b.lease.released)
	}
	if w.Code != http.StatusAccepted {
		t.Errorf("answer %d, want 202", w.Code)
	}
}
