package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/services/api/internal/payments"
	"github.com/redis/go-redis/v9"
)

// redisDB is this package's Redis database.
const redisDB = 6

// hangUp is a go-redis hook that makes the client hang up while a command
// waits for Redis, and then does what a Redis client that honours
// cancellation does: it gives up on the caller's side, although Redis may
// still run the script and leave a claim nobody owns.
type hangUp struct{ cancel context.CancelFunc }

func (h hangUp) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h hangUp) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h hangUp) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.cancel()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond): // Redis answered
		}
		return next(ctx, cmd)
	}
}

// TestBeginIsDetachedFromTheClient: a client that hangs up while Begin
// waits must not cancel Begin: the claim Redis makes is then owned by the
// request, whose work runs and whose answer is stored, so the client's
// retry is a replay and not a 409 for a whole lease.
func TestBeginIsDetachedFromTheClient(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	rdb := redis.NewClient(testenv.RedisOptions(t, redisDB))
	t.Cleanup(func() { _ = rdb.Close() })
	rdb.AddHook(hangUp{cancel})
	store := idem.New(rdb, idem.Config{Lease: 5 * time.Second, Timeout: time.Second})
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil)), boundary: boundaryOf(store), workTimeout: time.Second}
	key, err := idem.NewKey("m", testenv.Name(t, "k"))
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
	if w.Code != http.StatusAccepted || !worked {
		t.Errorf("answer %d, worked %v; want the work run and 202", w.Code, worked)
	}
	claim, err := store.Begin(context.Background(), key, stageAPI, "fp")
	if err != nil || claim.Outcome != idem.Completed {
		t.Errorf("Begin after the request = %v, %v; want its answer stored (Completed)", claim.Outcome, err)
	}
}

// publishingStore is a PaymentStore whose Create hands back published as
// the wait for its outbox confirm.
type publishingStore struct {
	PaymentStore
	published func()
}

func (p publishingStore) Create(_ context.Context, pay payments.Payment, first payments.Response) (payments.Created, error) {
	return payments.Created{PaymentID: pay.ID, Response: first, Published: p.published}, nil
}

// TestStageEndsWhileTheConfirmIsOnItsWay: a new payment's api stage is
// completed before the request waits for its outbox message's confirm, so
// that the Complete round trip overlaps the broker's instead of adding to
// it; the answer still waits for both.
func TestStageEndsWhileTheConfirmIsOnItsWay(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(testenv.RedisOptions(t, redisDB))
	t.Cleanup(func() { _ = rdb.Close() })
	store := idem.New(rdb, idem.Config{Lease: 5 * time.Second, Timeout: time.Second})
	key, err := idem.NewKey("m", testenv.Name(t, "k"))
	if err != nil {
		t.Fatal(err)
	}
	var waited bool
	var atWait idem.Outcome
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil)), boundary: boundaryOf(store), workTimeout: time.Second,
		payments: publishingStore{published: func() {
			waited = true
			claim, err := store.Begin(context.Background(), key, stageAPI, "fp")
			if err != nil {
				t.Errorf("Begin while the confirm is awaited: %v", err)
			}
			atWait = claim.Outcome
		}}}
	r := httptest.NewRequest(http.MethodPost, "/v1/payments", nil)
	w := httptest.NewRecorder()
	err = s.idempotent(w, r, key, "fp", func(ctx context.Context, w http.ResponseWriter) error {
		return s.insertPayment(ctx, w, payments.Payment{MerchantID: "m", IdempotencyKey: "k", Fingerprint: "fp",
			Amount: 100, Currency: "EUR", CustomerID: "c"})
	})
	if err != nil || w.Code != http.StatusAccepted {
		t.Fatalf("idempotent = %v, answer %d; want nil and 202", err, w.Code)
	}
	if !waited {
		t.Fatal("the answer was sent without waiting for the outbox confirm")
	}
	if atWait != idem.Completed {
		t.Errorf("stage while the confirm was awaited: %v, want completed (Complete before the wait)", atWait)
	}
}
