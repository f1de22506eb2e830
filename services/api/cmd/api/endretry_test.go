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
// in the fault demo. The request retries the end of its stage before it
// answers, so an answer the client has seen is always recorded in Redis.
// (With the earlier background retry, an api killed before Redis was back
// lost the retry, and the stage stayed PENDING for the whole retention.)

// startAPIOnPrivateRedis starts the api on its own redis-server.
func startAPIOnPrivateRedis(t *testing.T, env map[string]string) (*api, *testenv.RedisServer, *redis.Client) {
	t.Helper()
	srv := testenv.StartRedis(t)
	// PG_LOCK_TIMEOUT 0: a request waits on a key the test holds for as long as it holds it.
	e := map[string]string{"REDIS_URL": srv.URL(0), "PG_LOCK_TIMEOUT": "0"}
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
// is committed and before its answer is recorded. The request retries
// Complete until Redis is back and only then sends its 202: when the
// client has the answer, the stage is already completed with it (never
// PENDING), and a client retry is a plain replay from Redis.
func TestAnswerRecordedAfterRedisRestart(t *testing.T) {
	t.Parallel()
	a, srv, rdb := startAPIOnPrivateRedis(t, nil)
	key := testenv.Name(t, "k")
	tx := holdKey(t, a, a.merchantA, key) // the insert waits: Begin is done, Complete is not
	answered := postAsync(a, a.merchantA, key)
	waitForLockWait(t, a)

	const outage = 1500 * time.Millisecond
	start := time.Now()
	back := srv.Outage(outage)
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := <-answered
	took := time.Since(start)
	// Read the stage at once, before anything else can end it.
	state, stored := apiStage(t, rdb, a.merchantA, key)
	if first.Status != http.StatusAccepted {
		t.Fatalf("answer: %d %s, want 202", first.Status, first.Body)
	}
	if took < outage || took > outage+5*time.Second {
		t.Errorf("answer after %s; want it once Redis is back (after %s), soon after", took, outage)
	}
	if state != "C" || stored.Status != http.StatusAccepted || !bytes.Equal(stored.Body, first.Body) {
		t.Errorf("when the answer arrived: stage %q with %d %s, want C with the 202 that was sent: %s",
			state, stored.Status, stored.Body, first.Body)
	}
	<-back

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
// is down. The request retries the Release until Redis is back and only
// then sends the 500: the stage is already free when the client sees it,
// and the client's retry creates the payment at once.
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

	const outage = 1500 * time.Millisecond
	start := time.Now()
	back := srv.Outage(outage)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-answered
	took := time.Since(start)
	state, _ := apiStage(t, rdb, a.merchantA, key)
	if r.Status != http.StatusInternalServerError {
		t.Fatalf("answer: %d %s, want 500", r.Status, r.Body)
	}
	if took < outage {
		t.Errorf("answer after %s; want it once Redis is back (after %s)", took, outage)
	}
	if state != "" {
		t.Errorf("when the 500 arrived: stage %q, want it released", state)
	}
	<-back
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

// TestShutdownWaitsForEndRetry: SIGTERM while a request is retrying the
// Complete of its stage (Redis down). The shutdown waits for that request
// like for any other in flight: Redis comes back within the grace, the
// stage is completed, the client gets its 202, and run returns before the
// grace ends.
func TestShutdownWaitsForEndRetry(t *testing.T) {
	t.Parallel()
	const grace = 5 * time.Second
	a, srv, rdb := startAPIOnPrivateRedis(t, map[string]string{"SHUTDOWN_GRACE": grace.String()})
	key := testenv.Name(t, "k")
	tx := holdKey(t, a, a.merchantA, key)
	answered := postAsync(a, a.merchantA, key)
	waitForLockWait(t, a)
	srv.Stop()
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the request retrying its Complete", func() bool {
		return a.logs.index("boundary: could not end the stage in Redis (unreachable or full); retrying before sending the answer", map[string]any{"op": "complete"}) >= 0
	})

	start := time.Now()
	a.stop()
	const outage = time.Second
	time.Sleep(outage)
	select {
	case r := <-answered:
		t.Fatalf("answered while Redis was down: %d %s", r.Status, r.Body)
	default:
	}
	srv.Start()

	first := <-answered
	if first.Status != http.StatusAccepted {
		t.Fatalf("answer: %d %s, want 202", first.Status, first.Body)
	}
	select {
	case <-a.exited:
	case <-time.After(grace + 5*time.Second):
		t.Fatalf("run did not return within the grace (%s) and then some", grace)
	}
	if took := time.Since(start); took >= grace {
		t.Errorf("run returned after %s, want before the grace (%s) ran out", took, grace)
	}
	if state, stored := apiStage(t, rdb, a.merchantA, key); state != "C" || !bytes.Equal(stored.Body, first.Body) {
		t.Errorf("after the shutdown: stage %q with %s, want C with the answer sent", state, stored.Body)
	}
}
