package main

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/oncepay/oncepay/internal/testenv"
)

// TestRedisFullRefusesNewPayments: with Redis out of memory (maxmemory
// reached, policy noeviction) a new payment is refused with 503, a
// Retry-After and a problem that names the cause, and nothing reaches
// Postgres; a payment made before is still replayed from Redis, and /readyz
// stays 200 (Redis answers) while /metrics shows why. Once Redis has room,
// the same key creates the payment.
func TestRedisFullRefusesNewPayments(t *testing.T) {
	t.Parallel()
	a, srv, _ := startAPIOnPrivateRedis(t, nil)
	before := testenv.Name(t, "before")
	first := a.post(t, a.merchantA, before, paymentBody)
	if first.Status != http.StatusAccepted {
		t.Fatalf("payment before Redis is full: %d %s", first.Status, first.Body)
	}

	srv.Fill()

	key := testenv.Name(t, "k")
	r := a.post(t, a.merchantA, key, paymentBody)
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") != "5" {
		t.Fatalf("new payment on a full Redis: %d (Retry-After %q) %s, want 503 with Retry-After 5",
			r.Status, r.Header.Get("Retry-After"), r.Body)
	}
	if p := r.problem(t); p.Type != "urn:oncepay:api:problem:unavailable" || !strings.Contains(p.Detail, "out of memory") {
		t.Errorf("problem %+v, want type unavailable and a detail naming the store out of memory", p)
	}
	if !strings.Contains(a.logs.String(), "idem: store out of memory") {
		t.Error("the api did not log the cause (idem: store out of memory)")
	}
	if n := a.count(t, `SELECT count(*) FROM payments WHERE idempotency_key = $1`, key); n != 0 {
		t.Errorf("%d payments for the refused key, want none", n)
	}
	if n := a.count(t, `SELECT count(*) FROM outbox WHERE idempotency_key = $1`, key); n != 0 {
		t.Errorf("%d outbox rows for the refused key, want none", n)
	}

	replay := a.post(t, a.merchantA, before, paymentBody)
	if replay.Status != http.StatusAccepted || !bytes.Equal(replay.Body, first.Body) || replay.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay on a full Redis: %d %s (replayed %q), want the first answer replayed",
			replay.Status, replay.Body, replay.Header.Get("Idempotent-Replayed"))
	}
	if got := a.opsGet(t, "/readyz"); got.Status != http.StatusOK {
		t.Errorf("/readyz on a full Redis: %d %s, want 200 (Redis answers; replays are served)", got.Status, got.Body)
	}
	// What an operator's alerts see: the refusal counted apart from an
	// unreachable Redis, and Redis's memory at its limit.
	if n := a.metric(t, `idem_boundary_outcomes_total{op="begin",outcome="full",stage="api"}`); n != 1 {
		t.Errorf("begin outcome full = %v, want 1", n)
	}
	if n := a.metric(t, `idem_boundary_outcomes_total{op="begin",outcome="unavailable",stage="api"}`); n != 0 {
		t.Errorf("begin outcome unavailable = %v, want 0 (Redis answered: it is full)", n)
	}
	if used, max := a.metric(t, "redis_memory_used_bytes"), a.metric(t, "redis_memory_max_bytes"); max <= 0 || used < max {
		t.Errorf("redis_memory_used_bytes %v, redis_memory_max_bytes %v: want used at or above a set max", used, max)
	}

	srv.Unfill()
	if again := a.post(t, a.merchantA, key, paymentBody); again.Status != http.StatusAccepted || again.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("the refused key once Redis has room: %d %s, want a new 202", again.Status, again.Body)
	}
}
