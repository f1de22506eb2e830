package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
)

// TestRetryAfterClientTimeout: the client gives up on a request that is
// still being worked on (here the insert waits on a table lock) and
// retries. The retry is answered 409 with Retry-After while the first
// request still holds the key; once the first one finishes, the retry gets
// its answer, replayed byte for byte, and only one payment exists.
func TestRetryAfterClientTimeout(t *testing.T) {
	t.Parallel()
	a := startAPI(t, apiOptions{})
	ctx := context.Background()
	key := testenv.Name(t, "k")

	// Hold a lock that blocks every INSERT into payments.
	tx, err := a.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	if _, err := tx.Exec(ctx, `LOCK TABLE payments IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}

	req, _ := http.NewRequest(http.MethodPost, a.base+"/v1/payments", strings.NewReader(paymentBody))
	req.Header.Set("Authorization", "Bearer "+a.keys[a.merchantA])
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	impatient := &http.Client{Timeout: 300 * time.Millisecond}
	if resp, err := impatient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("first request answered %d while the insert was blocked", resp.StatusCode)
	} else if !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "Client.Timeout") {
		t.Fatalf("first request: %v, want a client timeout", err)
	}

	busy := a.post(t, a.merchantA, key, paymentBody)
	if busy.Status != http.StatusConflict || busy.Header.Get("Retry-After") == "" {
		t.Fatalf("retry while the first request works: %d %s, want 409 with Retry-After", busy.Status, busy.Body)
	}
	if err := tx.Commit(ctx); err != nil { // the first request's insert goes through
		t.Fatal(err)
	}

	var done response
	waitFor(t, 5*time.Second, "the retry answered 202", func() bool {
		done = a.post(t, a.merchantA, key, paymentBody)
		return done.Status == http.StatusAccepted
	})
	if done.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the retry's 202 is not marked as a replay of the first request's answer")
	}
	again := a.post(t, a.merchantA, key, paymentBody)
	if !bytes.Equal(again.Body, done.Body) {
		t.Errorf("replays differ: %s then %s", done.Body, again.Body)
	}
	if got := a.count(t, `SELECT count(*) FROM payments WHERE merchant_id = $1 AND idempotency_key = $2`, a.merchantA, key); got != 1 {
		t.Errorf("%d payment rows, want 1", got)
	}
}
