package main

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/redis/go-redis/v9"
)

// These tests run the api on a private redis-server (which keeps its data)
// and stop it while a request ends its lease, the way a Redis restart does
// in the fault demo. Before the fix the api stage stayed PENDING past its
// lease, for the whole retention, unless the client retried.

// startAPIOnPrivateRedis starts the api on its own redis-server.
func startAPIOnPrivateRedis(t *testing.T, env map[string]string) (*api, *testenv.RedisServer, *redis.Client) {
	t.Helper()
	srv := testenv.StartRedis(t)
	e := map[string]string{"REDIS_URL": srv.URL(0)}
	for k, v := range env {
		e[k] = v
	}
	return startAPI(t, apiOptions{env: e}), srv, srv.Client()
}

// apiStage returns the api stage's state and stored answer for key.
func apiStage(t *testing.T, rdb *redis.Client, merchant, key string) (string, idem.Response) {
	t.Helper()
	v, err := rdb.HMGet(context.Background(), "idem:v1:{"+merchant+":"+key+"}", "api:state", "api:result").Result()
	if err != nil {
		t.Fatalf("read the boundary: %v", err)
	}
	state, _ := v[0].(string)
	var stored idem.Response
	if raw, ok := v[1].(string); ok {
		if err := stored.UnmarshalBinary([]byte(raw)); err != nil {
			t.Fatalf("stored answer: %v", err)
		}
	}
	return state, stored
}

// TestAnswerRecordedAfterRedisRestart: Redis goes down after the payment
// is committed and before its answer is recorded. The 202 is sent at once
// anyway; once Redis is back, the background retry records it, so the
// stage is completed with that answer and a client retry is a plain
// replay from Redis.
func TestAnswerRecordedAfterRedisRestart(t *testing.T) {
	t.Parallel()
	a, srv, rdb := startAPIOnPrivateRedis(t, nil)
	key := testenv.Name(t, "k")
	tx := holdKey(t, a, a.merchantA, key) // the insert waits: Begin is done, Complete is not
	answered := postAsync(a, a.merchantA, key)
	waitForLockWait(t, a)

	const outage = 1500 * time.Millisecond
	back := srv.Outage(outage)
	start := time.Now()
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := <-answered
	if took := time.Since(start); first.Status != http.StatusAccepted || took >= outage {
		t.Fatalf("answer: %d %s after %s; want 202 before Redis is back (%s)", first.Status, first.Body, took, outage)
	}
	<-back

	var state string
	var stored idem.Response
	waitFor(t, 10*time.Second, "the api stage completed", func() bool {
		state, stored = apiStage(t, rdb, a.merchantA, key)
		return state == "C"
	})
	if stored.Status != http.StatusAccepted || !bytes.Equal(stored.Body, first.Body) {
		t.Errorf("stored answer %d %s, want the 202 that was sent: %s", stored.Status, stored.Body, first.Body)
	}
	again := a.post(t, a.merchantA, key, paymentBody)
	if again.Status != http.StatusAccepted || !bytes.Equal(again.Body, first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry: %d %s, want the first answer replayed", again.Status, again.Body)
	}
	if got := a.metric(t, `payments_backstop_total{result="replayed"}`); got != 0 {
		t.Errorf("the database backstop answered the retry (%v); the boundary should have", got)
	}
	if got := a.metric(t, `idem_lease_end_retries_total{op="complete",result="recovered"}`); got != 1 {
		t.Errorf(`idem_lease_end_retries_total{op="complete",result="recovered"} = %v, want 1`, got)
	}
}

// TestReleaseRetriedAfterRedisRestart: the payment fails (500) while Redis
// is down. The 500 is sent at once; once Redis is back the key is released
// in the background, so the stage is not left PENDING, and the client's
// retry creates the payment.
func TestReleaseRetriedAfterRedisRestart(t *testing.T) {
	t.Parallel()
	a, srv, rdb := startAPIOnPrivateRedis(t, nil)
	ctx := context.Background()
	key := testenv.Name(t, "k")
	// A constraint no payment satisfies, added in a transaction that holds
	// the table: the api's insert waits for it, then fails with a 500.
	tx, err := a.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	if _, err := tx.Exec(ctx, `ALTER TABLE payments ADD CONSTRAINT refuse_all CHECK (amount < 0) NOT VALID`); err != nil {
		t.Fatal(err)
	}
	answered := postAsync(a, a.merchantA, key)
	waitForLockWait(t, a)

	back := srv.Outage(1500 * time.Millisecond)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-answered; r.Status != http.StatusInternalServerError {
		t.Fatalf("answer: %d %s, want 500", r.Status, r.Body)
	}
	<-back
	waitFor(t, 10*time.Second, "the api stage released", func() bool {
		state, _ := apiStage(t, rdb, a.merchantA, key)
		return state == ""
	})
	if got := a.metric(t, `idem_lease_end_retries_total{op="release",result="recovered"}`); got != 1 {
		t.Errorf(`idem_lease_end_retries_total{op="release",result="recovered"} = %v, want 1`, got)
	}

	if _, err := a.pool.Exec(ctx, `ALTER TABLE payments DROP CONSTRAINT refuse_all`); err != nil {
		t.Fatal(err)
	}
	retry := a.post(t, a.merchantA, key, paymentBody) // at once: no lease to wait out
	if retry.Status != http.StatusAccepted || retry.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("retry: %d %s (replayed %q), want a new 202", retry.Status, retry.Body, retry.Header.Get("Idempotent-Replayed"))
	}
}

// TestShutdownWaitsForBoundaryRetries: SIGTERM right after an answer whose
// Complete is being retried. The shutdown waits for the retry (Redis is
// back within the grace), so the stage is completed; with Redis gone for
// good, the shutdown abandons the retry when the grace ends.
func TestShutdownWaitsForBoundaryRetries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		outage time.Duration // 0: for good
	}{
		{"redis back within the grace", time.Second},
		{"redis gone", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const grace = 3 * time.Second
			a, srv, rdb := startAPIOnPrivateRedis(t, map[string]string{"SHUTDOWN_GRACE": grace.String()})
			key := testenv.Name(t, "k")
			tx := holdKey(t, a, a.merchantA, key)
			answered := postAsync(a, a.merchantA, key)
			waitForLockWait(t, a)
			srv.Stop()
			if err := tx.Rollback(context.Background()); err != nil {
				t.Fatal(err)
			}
			first := <-answered
			if first.Status != http.StatusAccepted {
				t.Fatalf("answer: %d %s, want 202", first.Status, first.Body)
			}

			start := time.Now()
			a.stop()
			if tc.outage > 0 {
				time.Sleep(tc.outage)
				srv.Start()
			}
			select {
			case <-a.exited:
			case <-time.After(grace + 5*time.Second):
				t.Fatalf("run did not return within the grace (%s) and then some", grace)
			}
			took := time.Since(start)
			if tc.outage == 0 {
				if took < grace-500*time.Millisecond {
					t.Errorf("run returned after %s, before the grace (%s) ran out, with a retry pending", took, grace)
				}
				if a.logs.index("grace period over: boundary retries abandoned; their stages free up when the lease ends", nil) < 0 {
					t.Errorf("no log line about the abandoned retry")
				}
				return
			}
			if took >= grace {
				t.Errorf("run returned after %s, want before the grace (%s) ran out", took, grace)
			}
			if state, stored := apiStage(t, rdb, a.merchantA, key); state != "C" || !bytes.Equal(stored.Body, first.Body) {
				t.Errorf("after the shutdown: stage %q with %s, want C with the answer sent", state, stored.Body)
			}
		})
	}
}
