package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/oncepay/oncepay/internal/testenv"
)

// TestRandomMethodsAndPathsKeepMetricsBounded: 10,000 requests with made-up
// methods and paths, sent before any authentication, add no more than a
// handful of metric series, and the api's heap does not grow with them.
func TestRandomMethodsAndPathsKeepMetricsBounded(t *testing.T) {
	a := startAPI(t, apiOptions{env: map[string]string{"LOG_LEVEL": "info"}})
	const requests = 10_000
	// warm up: every fixed label value these requests can produce, once
	a.sendRandom(t, rand.New(rand.NewPCG(1, 1)), 200)
	a.logs.forget()
	seriesBefore, heapBefore := a.seriesCount(t), heapInUse()

	a.sendRandom(t, rand.New(rand.NewPCG(2, 2)), requests)
	a.logs.forget()
	seriesAfter, heapAfter := a.seriesCount(t), heapInUse()
	if grown := seriesAfter - seriesBefore; grown > 20 {
		t.Errorf("%d requests with random methods and paths added %d metric series (%d -> %d), want at most 20",
			requests, grown, seriesBefore, seriesAfter)
	}
	// generous: the series of 10,000 distinct methods alone take ~6 MiB
	const heapBound = 3 << 20
	if grown := int64(heapAfter) - int64(heapBefore); grown > heapBound {
		t.Errorf("heap grew by %d KiB over %d requests, want under %d KiB", grown>>10, requests, heapBound>>10)
	}
	t.Logf("series %d -> %d, heap %d KiB -> %d KiB", seriesBefore, seriesAfter, heapBefore>>10, heapAfter>>10)
}

// sendRandom sends n requests with random token methods (3-12 letters,
// some of them real methods) and random paths, on 8 connections.
func (a *api) sendRandom(t *testing.T, rng *rand.Rand, n int) {
	t.Helper()
	reqs := make([]*http.Request, n)
	for i := range reqs {
		method := randomToken(rng, 3+rng.IntN(10))
		if rng.IntN(4) == 0 {
			method = []string{"GET", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"}[rng.IntN(6)]
		}
		path := "/" + randomToken(rng, 1+rng.IntN(20))
		if rng.IntN(3) == 0 {
			path = "/v1/payments/" + randomToken(rng, 8)
		}
		req, err := http.NewRequest(method, a.base+strings.ToLower(path), nil)
		if err != nil {
			t.Fatal(err)
		}
		reqs[i] = req
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				resp, err := client.Do(reqs[i])
				if err != nil {
					errs <- err
					return
				}
				resp.Body.Close()
				if resp.StatusCode >= 500 {
					errs <- fmt.Errorf("%s %s: %d", reqs[i].Method, reqs[i].URL.Path, resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func randomToken(rng *rand.Rand, n int) string {
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[rng.IntN(len(letters))]
	}
	return string(b)
}

// seriesCount is the number of samples /metrics exposes.
func (a *api) seriesCount(t *testing.T) int {
	t.Helper()
	r := a.opsGet(t, "/metrics")
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			n++
		}
	}
	return n
}

// forget drops the lines kept so far (they are in the test's heap, which
// is the api's).
func (s *logSink) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf, s.lines = bytes.Buffer{}, nil
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestOpsEndpointsAreNotOnThePaymentsPort: /livez, /readyz and /metrics
// answer on the ops listener only; the payments port answers 404.
func TestOpsEndpointsAreNotOnThePaymentsPort(t *testing.T) {
	t.Parallel()
	a := startAPI(t, apiOptions{})
	for _, path := range []string{"/livez", "/readyz", "/metrics", "/debug/pprof/"} {
		if r := a.do(t, http.MethodGet, path, nil, nil); r.Status != http.StatusNotFound {
			t.Errorf("payments port: GET %s = %d, want 404", path, r.Status)
		}
	}
	for _, path := range []string{"/livez", "/readyz", "/metrics"} {
		if r := a.opsGet(t, path); r.Status != http.StatusOK {
			t.Errorf("ops port: GET %s = %d %s, want 200", path, r.Status, r.Body)
		}
	}
	if r := a.opsGet(t, "/v1/payments/pay_1"); r.Status != http.StatusNotFound {
		t.Errorf("ops port: GET /v1/payments/pay_1 = %d, want 404", r.Status)
	}
}

// TestReadyzCarriesNoInternalDetail: a dependency that is down is named in
// /readyz, its error (address, user) only in the log.
func TestReadyzCarriesNoInternalDetail(t *testing.T) {
	t.Parallel()
	addr := closedAddr(t)
	a := startAPI(t, apiOptions{notReady: true, env: map[string]string{"REDIS_URL": "redis://oncepay-user:s3cret@" + addr + "/0"}})
	r := a.opsGet(t, "/readyz")
	if r.Status != http.StatusServiceUnavailable {
		t.Errorf("readyz with Redis down = %d, want 503", r.Status)
	}
	_, port, _ := strings.Cut(addr, ":")
	for _, secret := range []string{port, "oncepay-user", "s3cret", "refused"} {
		if strings.Contains(string(r.Body), secret) {
			t.Errorf("readyz answer carries %q: %s", secret, r.Body)
		}
	}
	if !strings.Contains(string(r.Body), `"redis":{"status":"down"`) {
		t.Errorf("readyz answer %s does not say that redis is down", r.Body)
	}
	if a.logs.index("not ready", map[string]any{"check": "redis"}) < 0 {
		t.Errorf("the Redis error is not in the log")
	}
}

// TestStartupLogHasNoSecrets: the api's whole log, from start to a served
// request, holds none of the passwords of DATABASE_URL, in the forms pgx
// accepts besides userinfo (the harness Postgres trusts loopback, so any
// password connects).
func TestStartupLogHasNoSecrets(t *testing.T) {
	t.Parallel()
	base, err := url.Parse(testenv.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(base.Host, ":")
	db := strings.TrimPrefix(base.Path, "/")
	for name, tt := range map[string]struct{ url, secret string }{
		"keyword/value quoted": {fmt.Sprintf("host=%s port=%s user=%s password='kv s3cret' dbname=%s sslmode=disable", host, port, base.User.Username(), db), "kv s3cret"},
		"keyword/value":        {fmt.Sprintf("host=%s port=%s user=%s password=kv-pw-7f3a dbname=%s sslmode=disable", host, port, base.User.Username(), db), "kv-pw-7f3a"},
		"query parameter":      {fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable&password=q-pw-9c1e", base.User.Username(), base.Host, db), "q-pw-9c1e"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := startAPI(t, apiOptions{env: map[string]string{"DATABASE_URL": tt.url}})
			a.do(t, http.MethodGet, "/v1/payments/pay_x", map[string]string{"Authorization": "Bearer " + a.keys[a.merchantA]}, nil)
			logs := a.logs.String()
			if !strings.Contains(logs, `"msg":"starting"`) {
				t.Fatalf("no start-up line in the log:\n%s", logs)
			}
			if strings.Contains(logs, tt.secret) {
				t.Errorf("the log holds the password %q:\n%s", tt.secret, logs)
			}
		})
	}
}

// TestRateLimitConsumesNoKey: past its burst a merchant gets 429 with
// Retry-After; the refused request leaves no boundary record in Redis and
// no payment, so its Idempotency-Key is still free, and another merchant is
// not limited by it.
func TestRateLimitConsumesNoKey(t *testing.T) {
	t.Parallel()
	a := startAPI(t, apiOptions{env: map[string]string{"API_RATE_LIMIT": "0.2", "API_RATE_BURST": "2"}})
	for i := range 2 {
		if r := a.post(t, a.merchantA, testenv.Name(t, fmt.Sprint("k", i)), paymentBody); r.Status != http.StatusAccepted {
			t.Fatalf("payment %d within the burst = %d %s, want 202", i, r.Status, r.Body)
		}
	}
	key := testenv.Name(t, "limited")
	r := a.post(t, a.merchantA, key, paymentBody)
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Fatalf("payment past the burst = %d Retry-After %q %s, want 429 with Retry-After", r.Status, r.Header.Get("Retry-After"), r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("429 Content-Type = %q, want application/problem+json", ct)
	}
	keys := a.redisKeys(t, a.merchantA)
	if len(keys) != 2 {
		t.Errorf("boundary records of merchant A: %v, want the two accepted payments'", keys)
	}
	for _, k := range keys {
		if strings.Contains(k, key) {
			t.Errorf("a boundary record %s exists for the refused request", k)
		}
	}
	if n := a.count(t, `SELECT count(*) FROM payments WHERE idempotency_key = $1`, key); n != 0 {
		t.Errorf("%d payments for the refused request, want 0", n)
	}
	if r := a.post(t, a.merchantB, key, paymentBody); r.Status != http.StatusAccepted {
		t.Errorf("merchant B, not limited: %d %s, want 202", r.Status, r.Body)
	}
}
