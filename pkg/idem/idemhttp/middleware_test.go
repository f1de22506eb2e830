package idemhttp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemhttp"
)

// redisDB is this package's Redis database.
const redisDB = 13

// newStore returns a Store on the harness Redis.
func newStore(t *testing.T, cfg idem.Config) *idem.Store {
	t.Helper()
	return idem.New(redistest.Client(t, redisDB), cfg)
}

// call sends one request through h and returns the answer.
func call(h http.Handler, method, key, body string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "/orders", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if key != "" {
		r.Header.Set("Idempotency-Key", key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// counting is a handler that counts its runs and answers status with a
// body naming the run.
func counting(runs *atomic.Int64, status int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Order", fmt.Sprint(n))
		w.WriteHeader(status)
		fmt.Fprintf(w, "run %d", n)
	})
}

func TestReplayIsByteForByte(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	h := idemhttp.New(idemhttp.Config{Boundary: idemhttp.Store(newStore(t, idem.Config{})), Retention: time.Hour})(counting(&runs, http.StatusCreated))
	key := redistest.Name(t, "k")
	first := call(h, http.MethodPost, key, `{"a":1,"b":2}`)
	again := call(h, http.MethodPost, key, `{ "b":2, "a":1 }`) // the same JSON, spelled otherwise
	if runs.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1", runs.Load())
	}
	if first.Code != http.StatusCreated || again.Code != first.Code || again.Body.String() != first.Body.String() ||
		again.Header().Get("X-Order") != "1" || again.Header().Get("Content-Type") != "text/plain" {
		t.Errorf("replay %d %q %v; want the first answer %d %q %v", again.Code, again.Body, again.Header(), first.Code, first.Body, first.Header())
	}
	if got := again.Header().Get(idemhttp.HeaderReplayed); got != "true" {
		t.Errorf("replay %s = %q, want true", idemhttp.HeaderReplayed, got)
	}
	if got := first.Header().Get(idemhttp.HeaderReplayed); got != "" {
		t.Errorf("first answer %s = %q, want none", idemhttp.HeaderReplayed, got)
	}
	if got := first.Header().Get(idemhttp.HeaderRetention); got != "3600" {
		t.Errorf("%s = %q, want 3600", idemhttp.HeaderRetention, got)
	}
}

func TestAnswers(t *testing.T) {
	t.Parallel()
	store := idemhttp.Store(newStore(t, idem.Config{}))
	tests := []struct {
		name       string
		status     int // the handler's
		first      func(h http.Handler, key string) *httptest.ResponseRecorder
		then       func(h http.Handler, key string) *httptest.ResponseRecorder
		wantStatus int
		wantType   string
		wantRuns   int64
	}{
		{name: "missing key", status: 201, then: func(h http.Handler, _ string) *httptest.ResponseRecorder {
			return call(h, http.MethodPost, "", `{}`)
		}, wantStatus: 400, wantType: "invalid-idempotency-key"},
		{name: "two keys", status: 201, then: func(h http.Handler, key string) *httptest.ResponseRecorder {
			return call(h, http.MethodPost, key, `{}`, "Idempotency-Key", "other")
		}, wantStatus: 400, wantType: "invalid-idempotency-key"},
		{name: "malformed key", status: 201, then: func(h http.Handler, _ string) *httptest.ResponseRecorder {
			return call(h, http.MethodPost, "a b", `{}`)
		}, wantStatus: 400, wantType: "invalid-idempotency-key"},
		{name: "sf-string key", status: 201, then: func(h http.Handler, key string) *httptest.ResponseRecorder {
			return call(h, http.MethodPost, `"`+key+`"`, `{}`)
		}, wantStatus: 201, wantRuns: 1},
		{name: "safe method ignores the key", status: 200, then: func(h http.Handler, key string) *httptest.ResponseRecorder {
			call(h, http.MethodGet, key, ``)
			return call(h, http.MethodGet, key, ``)
		}, wantStatus: 200, wantRuns: 2},
		{name: "another payload", status: 201, first: func(h http.Handler, key string) *httptest.ResponseRecorder {
			return call(h, http.MethodPost, key, `{"a":1}`)
		}, then: func(h http.Handler, key string) *httptest.ResponseRecorder {
			return call(h, http.MethodPost, key, `{"a":2}`)
		}, wantStatus: 422, wantType: "idempotency-key-reused", wantRuns: 1},
		{name: "5xx releases the key", status: 503, first: func(h http.Handler, key string) *httptest.ResponseRecorder {
			return call(h, http.MethodPost, key, `{}`)
		}, then: func(h http.Handler, key string) *httptest.ResponseRecorder {
			return call(h, http.MethodPost, key, `{}`)
		}, wantStatus: 503, wantRuns: 2},
		{name: "4xx is stored", status: 409, first: func(h http.Handler, key string) *httptest.ResponseRecorder {
			return call(h, http.MethodPost, key, `{}`)
		}, then: func(h http.Handler, key string) *httptest.ResponseRecorder {
			return call(h, http.MethodPost, key, `{}`)
		}, wantStatus: 409, wantRuns: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var runs atomic.Int64
			h := idemhttp.New(idemhttp.Config{Boundary: store})(counting(&runs, tt.status))
			key := redistest.Name(t, "k")
			if tt.first != nil {
				tt.first(h, key)
			}
			got := tt.then(h, key)
			if got.Code != tt.wantStatus {
				t.Errorf("status %d %s, want %d", got.Code, got.Body, tt.wantStatus)
			}
			if tt.wantType != "" && !strings.Contains(got.Body.String(), `"type":"`+idemhttp.ProblemType+tt.wantType+`"`) {
				t.Errorf("body %s, want problem type %s", got.Body, tt.wantType)
			}
			if runs.Load() != tt.wantRuns {
				t.Errorf("handler ran %d times, want %d", runs.Load(), tt.wantRuns)
			}
		})
	}
}

// TestOneKeyOneExecution: many concurrent requests with one key run the
// handler once; every other one is answered the replay or 409 +
// Retry-After.
func TestOneKeyOneExecution(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		counting(&runs, http.StatusCreated).ServeHTTP(w, r)
	})
	h := idemhttp.New(idemhttp.Config{Boundary: idemhttp.Store(newStore(t, idem.Config{}))})(slow)
	key := redistest.Name(t, "k")
	const n = 64
	answers := make([]*httptest.ResponseRecorder, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = call(h, http.MethodPost, key, `{"n":1}`)
		}()
	}
	wg.Wait()
	if runs.Load() != 1 {
		t.Fatalf("handler ran %d times for one key, want 1", runs.Load())
	}
	for i, a := range answers {
		switch {
		case a.Code == http.StatusCreated && a.Body.String() == "run 1":
		case a.Code == http.StatusConflict && a.Header().Get("Retry-After") != "":
		default:
			t.Errorf("answer %d: %d %q %v; want the one run's answer or 409 with Retry-After", i, a.Code, a.Body, a.Header())
		}
	}
}

// TestPreferWaitGetsTheReplay: a request that finds its key in progress and
// asked to wait gets the first request's answer instead of 409.
func TestPreferWaitGetsTheReplay(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	entered, release := make(chan struct{}), make(chan struct{})
	blocking := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		counting(&runs, http.StatusCreated).ServeHTTP(w, r)
	})
	h := idemhttp.New(idemhttp.Config{Boundary: idemhttp.Store(newStore(t, idem.Config{}))})(blocking)
	key := redistest.Name(t, "k")
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- call(h, http.MethodPost, key, `{}`) }()
	<-entered
	if got := call(h, http.MethodPost, key, `{}`); got.Code != http.StatusConflict {
		t.Errorf("without Prefer: %d, want 409", got.Code)
	}
	go func() { time.Sleep(200 * time.Millisecond); close(release) }()
	got := call(h, http.MethodPost, key, `{}`, "Prefer", "wait=5")
	first := <-done
	if got.Code != http.StatusCreated || got.Body.String() != first.Body.String() || got.Header().Get(idemhttp.HeaderReplayed) != "true" {
		t.Errorf("with Prefer: wait=5: %d %q %v; want the first answer replayed", got.Code, got.Body, got.Header())
	}
}

// TestBackstopAnswersAMismatch: when the stage holds another fingerprint
// but the durable record is this request's, its answer is replayed.
func TestBackstopAnswersAMismatch(t *testing.T) {
	t.Parallel()
	store := idemhttp.Store(newStore(t, idem.Config{}))
	var runs atomic.Int64
	var durable sync.Map // fingerprint of the key's durable record -> answer
	cfg := idemhttp.Config{Boundary: store, Backstop: func(_ context.Context, r *http.Request, k idem.Key, fp string) (idem.Response, bool, error) {
		a, ok := durable.Load(fp)
		if !ok {
			return idem.Response{}, false, nil
		}
		return a.(idem.Response), true, nil
	}}
	h := idemhttp.New(cfg)(counting(&runs, http.StatusCreated))
	key := redistest.Name(t, "k")
	call(h, http.MethodPost, key, `{"a":1}`) // the stage now holds {"a":1}
	// The durable record says {"a":2} holds the key (Redis lost it and a
	// reuse recorded the stage, say): {"a":2} gets its answer.
	probe := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"a":2}`))
	probe.Header.Set("Content-Type", "application/json")
	fp, err := idemhttp.Fingerprint(probe)
	if err != nil {
		t.Fatal(err)
	}
	durable.Store(fp, idem.Response{Status: 202, Header: http.Header{"X-Held": {"yes"}}, Body: []byte("held")})
	got := call(h, http.MethodPost, key, `{"a":2}`)
	if got.Code != 202 || got.Body.String() != "held" || got.Header().Get(idemhttp.HeaderReplayed) != "true" {
		t.Errorf("backstop answer: %d %q %v; want 202 held, replayed", got.Code, got.Body, got.Header())
	}
	if got := call(h, http.MethodPost, key, `{"a":3}`); got.Code != http.StatusUnprocessableEntity {
		t.Errorf("a payload the backstop does not know: %d, want 422", got.Code)
	}
}

// TestPanicReleasesTheKey: a handler that panics gives its key back, so
// the retry runs.
func TestPanicReleasesTheKey(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	h := idemhttp.New(idemhttp.Config{Boundary: idemhttp.Store(newStore(t, idem.Config{}))})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if runs.Add(1) == 1 {
			panic("boom")
		}
		w.WriteHeader(http.StatusCreated)
	}))
	key := redistest.Name(t, "k")
	func() {
		defer func() { _ = recover() }()
		call(h, http.MethodPost, key, `{}`)
	}()
	if got := call(h, http.MethodPost, key, `{}`); got.Code != http.StatusCreated || runs.Load() != 2 {
		t.Errorf("retry after a panic: %d after %d runs; want 201 from a second run", got.Code, runs.Load())
	}
}

// TestWorkDeadlineIsTheLeases: the handler's context ends at the lease's
// deadline (before another request may take the key over), and is not
// cancelled by the client.
func TestWorkDeadlineIsTheLeases(t *testing.T) {
	t.Parallel()
	const lease = 2 * time.Second
	var deadline time.Time
	var ok bool
	var cancelled error
	h := idemhttp.New(idemhttp.Config{Boundary: idemhttp.Store(newStore(t, idem.Config{Lease: lease}))})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deadline, ok = r.Context().Deadline()
		cancelled = r.Context().Err()
	}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the client is gone already
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/orders", nil)
	r.Header.Set("Idempotency-Key", redistest.Name(t, "k"))
	start := time.Now()
	h.ServeHTTP(httptest.NewRecorder(), r)
	if !ok || !deadline.Before(start.Add(lease)) {
		t.Errorf("work deadline %v (set %v), want before %v after the start", deadline.Sub(start), ok, lease)
	}
	if cancelled != nil {
		t.Errorf("work context: %v; want it detached from the client", cancelled)
	}
}

// TestReleasedAnswerKeepsItsHeaders: a 5xx is released, never stored or
// replayed, so the client gets every header the handler set (a 503's
// Retry-After), not only Config.StoredHeaders.
func TestReleasedAnswerKeepsItsHeaders(t *testing.T) {
	t.Parallel()
	h := idemhttp.New(idemhttp.Config{Boundary: idemhttp.Store(newStore(t, idem.Config{})), StoredHeaders: []string{"Content-Type"}})(
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
	got := call(h, http.MethodPost, redistest.Name(t, "k"), `{}`)
	if got.Code != http.StatusServiceUnavailable || got.Header().Get("Retry-After") != "1" {
		t.Errorf("answer %d, Retry-After %q; want 503 with Retry-After 1", got.Code, got.Header().Get("Retry-After"))
	}
}
