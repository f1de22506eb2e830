package main

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
)

// TestPostgresRestart: with Postgres down a payment is answered 503 with
// Retry-After as problem+json, like a Redis outage, and its key released
// (nothing was written, the client may retry with the same key); a read
// is 503 too, each counted in postgres_unavailable_total; /readyz is 503.
// Once Postgres is back, the pool reconnects, the retry with the same key
// creates exactly one payment (not a stored 5xx) and a payment from before
// the outage reads back unchanged. It stops the shared Postgres, so it
// does not run in parallel.
func TestPostgresRestart(t *testing.T) {
	a := startAPI(t, apiOptions{})
	before := a.post(t, a.merchantA, testenv.Name(t, "before"), paymentBody)
	if before.Status != http.StatusAccepted {
		t.Fatalf("before the outage: %d %s", before.Status, before.Body)
	}

	testenv.Harness(t, "stop", "postgres")
	started := false
	t.Cleanup(func() {
		if !started {
			testenv.Harness(t, "start", "postgres")
		}
	})
	key := testenv.Name(t, "k")
	down := a.post(t, a.merchantA, key, paymentBody)
	wantUnavailable(t, "POST with Postgres down", down)
	wantUnavailable(t, "GET with Postgres down", a.get(t, a.merchantA, paymentID(t, before.Body)))
	if got := a.metric(t, "postgres_unavailable_total"); got != 2 {
		t.Errorf("postgres_unavailable_total = %v, want 2", got)
	}
	if state, _ := a.rdb.HGet(t.Context(), "idem:v1:{"+a.merchantA+":"+key+"}", "api:state").Result(); state != "" {
		t.Errorf("the failed request's stage is %q, want released (absent)", state)
	}
	waitStatus(t, a.ops+"/readyz", http.StatusServiceUnavailable, 3*time.Second)

	testenv.Harness(t, "start", "postgres")
	started = true
	a.pool.Reset() // the test's own connections died with the server
	waitStatus(t, a.ops+"/readyz", http.StatusOK, 15*time.Second)

	var retry response
	waitFor(t, 10*time.Second, "the retry answered 202", func() bool {
		retry = a.post(t, a.merchantA, key, paymentBody)
		return retry.Status == http.StatusAccepted
	})
	if retry.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("the retry was answered as a replay, but nothing was created before")
	}
	if got := a.count(t, `SELECT count(*) FROM payments WHERE merchant_id = $1 AND idempotency_key = $2`, a.merchantA, key); got != 1 {
		t.Errorf("%d payment rows, want 1", got)
	}
	if again := a.post(t, a.merchantA, key, paymentBody); !bytes.Equal(again.Body, retry.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay after the outage: %d %s", again.Status, again.Body)
	}
	if r := a.get(t, a.merchantA, paymentID(t, before.Body)); r.Status != http.StatusOK {
		t.Errorf("the payment from before the outage: %d %s", r.Status, r.Body)
	}
}

// wantUnavailable checks that r is the answer to a request that found the
// database unreachable: 503, Retry-After, problem+json of type unavailable.
func wantUnavailable(t *testing.T, what string, r response) {
	t.Helper()
	if r.Status != http.StatusServiceUnavailable {
		t.Errorf("%s: %d %s, want 503 (retry later with the same key)", what, r.Status, r.Body)
		return
	}
	if got := r.Header.Get("Retry-After"); got != "1" {
		t.Errorf("%s: Retry-After %q, want 1", what, got)
	}
	if got := r.Header.Get("Content-Type"); got != "application/problem+json" {
		t.Errorf("%s: Content-Type %q, want application/problem+json", what, got)
	}
	if p := r.problem(t); p.Type != "urn:oncepay:api:problem:unavailable" || p.Status != http.StatusServiceUnavailable {
		t.Errorf("%s: problem %+v, want type unavailable, status 503", what, p)
	}
}
