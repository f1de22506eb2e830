package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
)

// TestClientHangsUpDuringBegin: Redis holds writes (CLIENT PAUSE WRITE)
// while the api's Begin waits for it, and the client gives up meanwhile.
// Once Redis answers, the request's claim is owned and ended by the api,
// so the client's retry gets the payment (202, or its replay), not 409
// for a whole lease. The end-to-end check of what
// internal/httpapi TestBeginIsDetachedFromTheClient pins (go-redis does
// not abort a read in flight when its context is cancelled, so this test
// alone does not tell a Begin on the client's context apart). It pauses
// the shared Redis, so it does not run in parallel.
func TestClientHangsUpDuringBegin(t *testing.T) {
	a := startAPI(t, apiOptions{env: map[string]string{"IDEM_TIMEOUT": "3s", "IDEM_LEASE": "30s"}})
	ctx := context.Background()
	key := testenv.Name(t, "k")

	const pause = 1500 * time.Millisecond
	if err := a.rdb.Do(ctx, "CLIENT", "PAUSE", pause.Milliseconds(), "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	t.Cleanup(func() { a.rdb.Do(context.Background(), "CLIENT", "UNPAUSE") })

	req, _ := http.NewRequest(http.MethodPost, a.base+"/v1/payments", strings.NewReader(paymentBody))
	req.Header.Set("Authorization", "Bearer "+a.keys[a.merchantA])
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	impatient := &http.Client{Timeout: 300 * time.Millisecond}
	if resp, err := impatient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("first request answered %d while Redis was paused", resp.StatusCode)
	}
	time.Sleep(time.Until(paused.Add(pause + 200*time.Millisecond)))

	var r response
	waitFor(t, 5*time.Second, "the retry answered 202", func() bool {
		r = a.post(t, a.merchantA, key, paymentBody)
		if r.Status == http.StatusConflict {
			t.Logf("retry: 409 (Retry-After %s)", r.Header.Get("Retry-After"))
		}
		return r.Status == http.StatusAccepted
	})
	if got := a.count(t, `SELECT count(*) FROM payments WHERE merchant_id = $1 AND idempotency_key = $2`, a.merchantA, key); got != 1 {
		t.Errorf("%d payment rows, want 1", got)
	}
}
