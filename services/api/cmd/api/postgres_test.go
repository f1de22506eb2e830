package main

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
)

// TestPostgresRestart: with Postgres down a payment is answered 500 and
// its key released (nothing was written, the client may retry with the
// same key); /readyz is 503. Once Postgres is back, the pool reconnects,
// the retry creates exactly one payment and a payment from before the
// outage reads back unchanged. It stops the shared Postgres, so it does not
// run in parallel.
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
	if down.Status != http.StatusInternalServerError {
		t.Errorf("with Postgres down: %d %s, want 500 (safe to retry with the same key)", down.Status, down.Body)
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
