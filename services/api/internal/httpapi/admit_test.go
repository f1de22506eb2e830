package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/oncepay/oncepay/services/api/internal/metrics"
	"github.com/oncepay/oncepay/services/api/internal/payments"
)

// heldStore is a PaymentStore whose Get holds its request until a value
// is sent on release or the request's context ends. entered gets one value
// per Get that began, left one per Get that returned.
type heldStore struct {
	PaymentStore
	entered, left chan struct{}
	release       chan struct{}
	stop          chan struct{} // closed at the end of the test: every Get returns
}

func newHeldStore(n int) heldStore {
	return heldStore{entered: make(chan struct{}, n), left: make(chan struct{}, n), release: make(chan struct{}), stop: make(chan struct{})}
}

func (h heldStore) Get(ctx context.Context, merchant, id string) (payments.Payment, error) {
	h.entered <- struct{}{}
	defer func() { h.left <- struct{}{} }()
	select {
	case <-h.release:
		return payments.Payment{ID: id, MerchantID: merchant, Status: "pending"}, nil
	case <-ctx.Done():
		return payments.Payment{}, ctx.Err()
	case <-h.stop:
		return payments.Payment{}, errors.New("test over")
	}
}

// admitServer serves the api's handler with at most limit requests in
// flight over a heldStore for n requests. Its Boundary is nil: a POST that
// got past the door would panic, so a refused POST shows the refusal came
// before any work. At the end of the test every Get still held returns
// before the server closes (which waits for its handlers).
func admitServer(t *testing.T, limit, n int) (*httptest.Server, *metrics.Metrics, heldStore) {
	t.Helper()
	store := newHeldStore(n)
	m := metrics.New(prometheus.NewRegistry(), "t")
	srv := httptest.NewServer(NewServer(Deps{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Keys: testKeys{}, Payments: store,
		Metrics: m, MaxInFlight: limit,
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(store.stop) })
	return srv, m, store
}

// answer is what a test request got back.
type answer struct {
	status      int
	retryAfter  string
	contentType string
	problem     problem
	err         error
}

// sendAdmit sends an authenticated request and reads its answer.
func sendAdmit(ctx context.Context, c *http.Client, method, url string) answer {
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"amount":100,"currency":"EUR","customer_id":"c"}`)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "admit-test")
	res, err := c.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer res.Body.Close()
	a := answer{status: res.StatusCode, retryAfter: res.Header.Get("Retry-After"), contentType: res.Header.Get("Content-Type")}
	if strings.HasPrefix(a.contentType, "application/problem+json") {
		a.err = json.NewDecoder(res.Body).Decode(&a.problem)
	}
	return a
}

// checkShed reports how a refusal differs from the overloaded 503.
func checkShed(t *testing.T, a answer) {
	t.Helper()
	switch {
	case a.err != nil:
		t.Errorf("refusal: %v", a.err)
	case a.status != http.StatusServiceUnavailable || a.retryAfter != "1" || a.contentType != "application/problem+json" ||
		a.problem.Type != problemType+"unavailable" || a.problem.Status != http.StatusServiceUnavailable ||
		!strings.Contains(a.problem.Detail, "overloaded"):
		t.Errorf("refusal: got %d Retry-After %q %s %+v, want 503 Retry-After 1 application/problem+json type %sunavailable, detail naming the service overloaded",
			a.status, a.retryAfter, a.contentType, a.problem, problemType)
	}
}

// wait receives from c, failing the test after a generous deadline (the
// test waits for something that must happen, it does not time it).
func wait(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not within 10 s", what)
	}
}

// TestAdmissionBoundsRequestsInFlight: of many concurrent requests exactly
// the limit get in; every other one is answered with the overloaded 503
// while the admitted ones still hold their slots, so none of them waited
// for a slot; while full, a POST is refused before it reaches the
// idempotency boundary.
func TestAdmissionBoundsRequestsInFlight(t *testing.T) {
	t.Parallel()
	const limit, n = 8, 64
	srv, m, store := admitServer(t, limit, n)
	c := srv.Client()

	answers := make(chan answer, n)
	for range n {
		go func() { answers <- sendAdmit(t.Context(), c, http.MethodGet, srv.URL+"/v1/payments/pay_x") }()
	}
	// The held requests answer only once released, so the first n-limit
	// answers are all the refusals.
	for i := range n - limit {
		select {
		case a := <-answers:
			checkShed(t, a)
		case <-time.After(10 * time.Second):
			t.Fatalf("got %d answers while the admitted requests were held, want %d refusals (is the limit on?)", i, n-limit)
		}
	}
	if got := len(store.entered); got != limit {
		t.Errorf("requests admitted at once: got %d, want %d", got, limit)
	}
	if got := testutil.ToFloat64(m.HTTPInFlight); got != limit {
		t.Errorf("http_requests_in_flight: got %v, want %d", got, limit)
	}
	// While full, a new payment is refused too, before the boundary (nil
	// here: reaching it would panic and answer 500).
	checkShed(t, sendAdmit(t.Context(), c, http.MethodPost, srv.URL+"/v1/payments"))
	close(store.release)
	for range limit {
		checkOK(t, <-answers)
	}
	if got := testutil.ToFloat64(m.HTTPShed); got != n-limit+1 {
		t.Errorf("http_requests_shed_total: got %v, want %d", got, n-limit+1)
	}
	if got := testutil.ToFloat64(m.HTTPInFlight); got != 0 {
		t.Errorf("http_requests_in_flight after the answers: got %v, want 0", got)
	}
}

// TestAdmissionFreesSlots: a slot is given back when its request is
// answered and when its client hangs up, and the bound holds afterwards.
func TestAdmissionFreesSlots(t *testing.T) {
	t.Parallel()
	const limit = 2
	srv, _, store := admitServer(t, limit, 16)
	c := srv.Client()
	get := srv.URL + "/v1/payments/pay_x"

	// hold starts a request that is admitted and held.
	hold := func(ctx context.Context, what string) <-chan answer {
		t.Helper()
		done := make(chan answer, 1)
		go func() { done <- sendAdmit(ctx, c, http.MethodGet, get) }()
		wait(t, store.entered, what+" admitted")
		return done
	}
	// admitted retries until a request gets a slot (the slot of a request
	// that just returned is given back right after its handler returns);
	// each try is refused at once or held.
	admitted := func(what string) <-chan answer {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			done := make(chan answer, 1)
			go func() { done <- sendAdmit(t.Context(), c, http.MethodGet, get) }()
			select {
			case <-store.entered:
				return done
			case a := <-done:
				checkShed(t, a)
				time.Sleep(time.Millisecond)
			}
		}
		t.Fatalf("%s: no slot free within 10 s", what)
		return nil
	}

	// refused sends a request that must be refused; held instead, it
	// fails when the client gives up after 10 s.
	refused := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		checkShed(t, sendAdmit(ctx, c, http.MethodGet, get))
	}

	ctx, hangUp := context.WithCancel(t.Context())
	first := hold(ctx, "first")
	second := hold(t.Context(), "second")
	refused()

	hangUp()
	wait(t, store.left, "hung-up request returned")
	if a := <-first; !errors.Is(a.err, context.Canceled) {
		t.Errorf("first after hanging up: got %d %v, want context.Canceled", a.status, a.err)
	}
	third := admitted("after a hang-up")
	refused()

	store.release <- struct{}{} // one of the two held requests is answered
	wait(t, store.left, "answered request returned")
	var held <-chan answer // the one still held
	select {
	case a := <-second:
		checkOK(t, a)
		held = third
	case a := <-third:
		checkOK(t, a)
		held = second
	}
	fourth := admitted("after an answer")
	refused()

	store.release <- struct{}{}
	store.release <- struct{}{}
	checkOK(t, <-held)
	checkOK(t, <-fourth)
}

func checkOK(t *testing.T, a answer) {
	t.Helper()
	if a.status != http.StatusOK {
		t.Errorf("admitted request: got %d %v, want 200", a.status, a.err)
	}
}

// TestAdmissionOff: with no limit every request gets in.
func TestAdmissionOff(t *testing.T) {
	t.Parallel()
	const n = 32
	srv, m, store := admitServer(t, 0, n)
	answers := make(chan answer, n)
	for range n {
		go func() { answers <- sendAdmit(t.Context(), srv.Client(), http.MethodGet, srv.URL+"/v1/payments/pay_x") }()
	}
	for i := range n {
		wait(t, store.entered, fmt.Sprintf("request %d of %d admitted", i+1, n))
	}
	close(store.release)
	for range n {
		checkOK(t, <-answers)
	}
	if got := testutil.ToFloat64(m.HTTPShed); got != 0 {
		t.Errorf("http_requests_shed_total: got %v, want 0", got)
	}
}
