package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/services/api/internal/metrics"
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

// testKeys is a Keyring of one merchant, "m", with API key "k".
type testKeys struct{}

func (testKeys) Lookup(apiKey string) (string, bool) { return "m", apiKey == "k" }

// createdStore is a PaymentStore whose Create succeeds, handing back
// published as the wait for its outbox confirm and calling created with
// Create's context.
type createdStore struct {
	PaymentStore
	published func()
	created   func(ctx context.Context)
}

func (p createdStore) Create(ctx context.Context, pay payments.Payment, first payments.Response) (payments.Created, error) {
	if p.created != nil {
		p.created(ctx)
	}
	return payments.Created{PaymentID: pay.ID, Response: first, Published: p.published}, nil
}

// testServer is the api's handler on store, with payments as the system
// of record.
func testServer(t *testing.T, store *idem.Store, pays PaymentStore) http.Handler {
	t.Helper()
	return NewServer(Deps{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Keys: testKeys{}, Boundary: boundaryOf(store),
		Payments: pays, Metrics: metrics.New(prometheus.NewRegistry(), "t"), WorkTimeout: store.LeaseDuration(),
	})
}

// createRequest is a valid POST /v1/payments with key on ctx.
func createRequest(ctx context.Context, key string) *http.Request {
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/payments",
		strings.NewReader(`{"amount":100,"currency":"EUR","customer_id":"c"}`))
	r.Header.Set("Authorization", "Bearer k")
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Idempotency-Key", key)
	return r
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
	worked := false
	h := testServer(t, store, createdStore{created: func(context.Context) { worked = true }})
	key := testenv.Name(t, "k")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, createRequest(ctx, key))
	if w.Code != http.StatusAccepted || !worked {
		t.Fatalf("answer %d %s, worked %v; want the work run and 202: Begin ran on the client's context", w.Code, w.Body, worked)
	}
	retry := httptest.NewRecorder()
	h.ServeHTTP(retry, createRequest(context.Background(), key))
	if retry.Code != http.StatusAccepted || retry.Header().Get(headerReplayed) != "true" {
		t.Errorf("retry: %d, %s = %q; want the answer stored and replayed (202, true)",
			retry.Code, headerReplayed, retry.Header().Get(headerReplayed))
	}
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
	key := testenv.Name(t, "k")
	var waited bool
	var atWait int
	var h http.Handler
	h = testServer(t, store, createdStore{published: func() {
		waited = true
		w := httptest.NewRecorder() // a retry while the confirm is awaited
		h.ServeHTTP(w, createRequest(context.Background(), key))
		atWait = w.Code
	}})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, createRequest(context.Background(), key))
	if w.Code != http.StatusAccepted {
		t.Fatalf("answer %d %s; want 202", w.Code, w.Body)
	}
	if !waited {
		t.Fatal("the answer was sent without waiting for the outbox confirm")
	}
	if atWait != http.StatusAccepted {
		t.Errorf("a retry while the confirm was awaited: %d, want 202 (replayed: Complete before the wait)", atWait)
	}
}

// slowAnswer is a go-redis hook that delays the answer of the first
// script call by delay, after Redis ran it: a Begin whose answer is slow
// to come back.
type slowAnswer struct {
	once  *sync.Once
	delay time.Duration
}

func (s slowAnswer) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s slowAnswer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		s.after(cmd.Name())
		return err
	}
}

func (s slowAnswer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if len(cmds) > 0 {
			s.after(cmds[0].Name())
		}
		return err
	}
}

func (s slowAnswer) after(name string) {
	if name == "evalsha" || name == "eval" {
		s.once.Do(func() { time.Sleep(s.delay) })
	}
}

// TestWorkEndsBeforeTheLeaseCanBeTakenOver: the work's deadline counts
// from when Begin was sent, not from when its answer came back: another
// request may take the key over from the send time plus the lease on, so
// a deadline counted after a slow answer would let the work outlive the
// lease.
func TestWorkEndsBeforeTheLeaseCanBeTakenOver(t *testing.T) {
	t.Parallel()
	const lease = 2 * time.Second
	rdb := redis.NewClient(testenv.RedisOptions(t, redisDB))
	t.Cleanup(func() { _ = rdb.Close() })
	rdb.AddHook(slowAnswer{once: &sync.Once{}, delay: 500 * time.Millisecond})
	store := idem.New(rdb, idem.Config{Lease: lease, Timeout: 2 * time.Second})
	var deadline time.Time
	var ok bool
	h := testServer(t, store, createdStore{created: func(ctx context.Context) { deadline, ok = ctx.Deadline() }})
	sent := time.Now() // Begin is sent after this
	w := httptest.NewRecorder()
	h.ServeHTTP(w, createRequest(context.Background(), testenv.Name(t, "k")))
	if w.Code != http.StatusAccepted {
		t.Fatalf("answer %d %s; want 202", w.Code, w.Body)
	}
	if !ok {
		t.Fatal("the work ran without a deadline")
	}
	if takeover := sent.Add(lease); !deadline.Before(takeover) {
		t.Errorf("work deadline %v after the send; another request may take the key over %v after it: the work outlives the lease",
			deadline.Sub(sent).Round(time.Millisecond), lease)
	}
}
