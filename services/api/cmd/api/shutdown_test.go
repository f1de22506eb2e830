package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncepay/oncepay/internal/testenv"
)

// holdKey inserts, in a transaction left open, a payment row holding
// (merchant, key) in the unique index: the api's INSERT for that key waits
// until the transaction ends. Rolling it back lets the api's insert win.
func holdKey(t *testing.T, a *api, merchant, key string) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := a.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	_, err = tx.Exec(ctx, `INSERT INTO payments (id, merchant_id, idempotency_key, request_fingerprint, amount,
			currency, customer_id, response_status, response_body, created_at, updated_at)
		VALUES ($1, $2, $3, 'blocker', 1, 'EUR', 'c', 202, '{}', now(), now())`, "pay_blocker_"+key, merchant, key)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// postAsync sends a payment request in the background; the result has
// Status 0 and the error in Body when the request failed.
func postAsync(a *api, merchant, key string) <-chan response {
	out := make(chan response, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, a.base+"/v1/payments", bytes.NewReader([]byte(paymentBody)))
		req.Header.Set("Authorization", "Bearer "+a.keys[merchant])
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- response{Body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		out <- response{Status: resp.StatusCode, Header: resp.Header, Body: b}
	}()
	return out
}

func waitForLockWait(t *testing.T, a *api) {
	t.Helper()
	waitFor(t, 5*time.Second, "the api's insert waiting on the held key", func() bool {
		return a.count(t, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`) >= 1
	})
}

// TestGracefulShutdown drives run through a shutdown with a request in
// flight: readiness turns 503 first, the in-flight request still gets its
// 202, and run returns well within SHUTDOWN_GRACE.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	// PG_LOCK_TIMEOUT 0: the request waits on the held key as long as the test holds it.
	a := startAPI(t, apiOptions{env: map[string]string{"SHUTDOWN_GRACE": "10s", "SHUTDOWN_DELAY": "1s", "PG_LOCK_TIMEOUT": "0"}})
	key := testenv.Name(t, "slow")
	tx := holdKey(t, a, a.merchantA, key)
	slow := postAsync(a, a.merchantA, key)
	waitForLockWait(t, a)

	signalled := time.Now()
	a.stop() // what SIGTERM does
	waitStatus(t, a.ops+"/readyz", http.StatusServiceUnavailable, 900*time.Millisecond)
	select {
	case r := <-slow:
		t.Fatalf("the in-flight request ended before its lock was released: %d %s", r.Status, r.Body)
	default:
	}

	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-slow:
		if r.Status != http.StatusAccepted {
			t.Fatalf("in-flight request: %d %s, want 202", r.Status, r.Body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the in-flight request did not finish")
	}
	select {
	case <-a.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return within SHUTDOWN_GRACE")
	}
	if a.err != nil {
		t.Fatalf("run returned %v", a.err)
	}
	took := time.Since(signalled)
	if took > 5*time.Second {
		t.Errorf("shutdown took %s, want about SHUTDOWN_DELAY (1s) plus the request", took)
	}
	draining := a.logs.index("draining: readiness now answers 503", nil)
	served := a.logs.index("request", map[string]any{"idempotency_key": key, "status": 202})
	stopped := a.logs.index("http server stopped", nil)
	closed := a.logs.index("stopped", nil)
	if !(draining >= 0 && draining < served && served < stopped && stopped < closed) {
		t.Errorf("log order: draining at %d, in-flight request served at %d, http stopped at %d, stopped at %d; want increasing",
			draining, served, stopped, closed)
	}
	if _, err := http.Get(a.ops + "/livez"); err == nil {
		t.Error("the api still accepts connections after run returned")
	}
	if n := a.count(t, `SELECT count(*) FROM payments WHERE idempotency_key = $1`, key); n != 1 {
		t.Errorf("%d payments for the in-flight request, want 1", n)
	}
}

// TestShutdownGraceBoundsExit: a request stuck past SHUTDOWN_GRACE does not
// keep the process alive.
func TestShutdownGraceBoundsExit(t *testing.T) {
	t.Parallel()
	const grace = 2 * time.Second
	a := startAPI(t, apiOptions{env: map[string]string{"SHUTDOWN_GRACE": grace.String(), "PG_LOCK_TIMEOUT": "0"}}) // stuck past the grace
	key := testenv.Name(t, "stuck")
	holdKey(t, a, a.merchantA, key)
	stuck := postAsync(a, a.merchantA, key)
	waitForLockWait(t, a)

	signalled := time.Now()
	a.stop()
	select {
	case <-a.exited:
	case <-time.After(grace + 5*time.Second):
		t.Fatal("run did not return after the grace period")
	}
	if took := time.Since(signalled); took < grace || took > grace+time.Second {
		t.Errorf("run returned %s after the signal, want just after the %s grace", took, grace)
	}
	if r := <-stuck; r.Status != 0 {
		t.Errorf("the stuck request got %d %s; want its connection closed", r.Status, r.Body)
	} else {
		t.Logf("stuck request: %s", r.Body)
	}
}
