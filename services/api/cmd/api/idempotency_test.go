package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/oncepay/oncepay/internal/testenv"
)

// postAtOnce sends n identical payment requests of merchant A under key
// at once (they wait on one signal) and returns their answers, in no
// particular order.
func (a *api) postAtOnce(t *testing.T, key string, n int) []response {
	t.Helper()
	answers := make([]response, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			answers[i] = a.post(t, a.merchantA, key, paymentBody)
		})
	}
	close(start)
	wg.Wait()
	return answers
}

// TestConcurrentIdenticalRequests: 50 identical requests at once create
// exactly one payment; every other answer is a 409 or a byte-identical
// replay of the one 202.
func TestConcurrentIdenticalRequests(t *testing.T) {
	t.Parallel()
	a := startAPI(t, apiOptions{})
	key := testenv.Name(t, "k")
	answers := a.postAtOnce(t, key, 50)

	var first []byte
	fresh, replays, conflicts := 0, 0, 0
	for _, r := range answers {
		switch {
		case r.Status == http.StatusAccepted && r.Header.Get("Idempotent-Replayed") == "":
			fresh++
			first = r.Body
		case r.Status == http.StatusAccepted:
			replays++
		case r.Status == http.StatusConflict && r.Header.Get("Retry-After") != "":
			conflicts++
		default:
			t.Errorf("unexpected answer %d %s", r.Status, r.Body)
		}
	}
	if fresh != 1 {
		t.Fatalf("%d first answers (202 without Idempotent-Replayed), want exactly 1", fresh)
	}
	for _, r := range answers {
		if r.Status == http.StatusAccepted && !bytes.Equal(r.Body, first) {
			t.Errorf("202 body %s differs from the first %s", r.Body, first)
		}
	}
	t.Logf("1 created, %d replayed, %d in progress", replays, conflicts)
	if got := a.count(t, `SELECT count(*) FROM payments WHERE merchant_id = $1 AND idempotency_key = $2`, a.merchantA, key); got != 1 {
		t.Errorf("%d payment rows, want 1", got)
	}
	if got := a.count(t, `SELECT count(*) FROM outbox WHERE merchant_id = $1 AND idempotency_key = $2`, a.merchantA, key); got != 1 {
		t.Errorf("%d outbox rows, want 1", got)
	}
}

// TestBackstopAfterRedisFlush: when Redis forgets every key, the unique
// constraint answers: the same request gets the same payment back, byte for
// byte, and another payload under the key gets 422. It flushes this
// module's Redis database, so it does not run in parallel.
func TestBackstopAfterRedisFlush(t *testing.T) {
	a := startAPI(t, apiOptions{})
	ctx := context.Background()
	key := testenv.Name(t, "k")
	flush := func() {
		t.Helper()
		if err := a.rdb.FlushDB(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}

	first := a.post(t, a.merchantA, key, paymentBody)
	if first.Status != http.StatusAccepted {
		t.Fatalf("first request: %d %s", first.Status, first.Body)
	}
	flush()
	again := a.post(t, a.merchantA, key, paymentBody)
	if again.Status != http.StatusAccepted || !bytes.Equal(again.Body, first.Body) ||
		again.Header.Get("Location") != first.Header.Get("Location") {
		t.Fatalf("after FLUSHDB: %d %s (Location %q), want the first answer %s (Location %q)",
			again.Status, again.Body, again.Header.Get("Location"), first.Body, first.Header.Get("Location"))
	}
	if again.Header.Get("Idempotent-Replayed") != "true" {
		t.Error("the backstop answer has no Idempotent-Replayed: true")
	}
	// The backstop's answer was completed into Redis: the next retry is a
	// plain replay.
	if r := a.post(t, a.merchantA, key, paymentBody); !bytes.Equal(r.Body, first.Body) || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry after the backstop: %d %s", r.Status, r.Body)
	}

	flush()
	other := a.post(t, a.merchantA, key, strings.Replace(paymentBody, "1250", "999", 1))
	if other.Status != http.StatusUnprocessableEntity {
		t.Errorf("other payload after FLUSHDB: %d %s, want 422", other.Status, other.Body)
	}
	if got := a.count(t, `SELECT count(*) FROM payments WHERE idempotency_key = $1`, key); got != 1 {
		t.Errorf("%d payment rows, want 1", got)
	}
	for sample, want := range map[string]float64{
		`payments_backstop_total{result="replayed"}`: 1,
		`payments_backstop_total{result="mismatch"}`: 1,
		`payments_created_total`:                     1,
	} {
		if got := a.metric(t, sample); got != want {
			t.Errorf("%s = %v, want %v", sample, got, want)
		}
	}
}

// TestKeysAreScopedPerMerchant: merchant B reusing merchant A's key string
// gets its own payment, and neither can read the other's. This api migrates
// its own database (API_MIGRATE_ON_START).
func TestKeysAreScopedPerMerchant(t *testing.T) {
	t.Parallel()
	a := startAPI(t, apiOptions{migrateOnStart: true})
	key := testenv.Name(t, "shared")
	ra := a.post(t, a.merchantA, key, paymentBody)
	rb := a.post(t, a.merchantB, key, paymentBody)
	if ra.Status != http.StatusAccepted || rb.Status != http.StatusAccepted {
		t.Fatalf("A: %d %s; B: %d %s; want 202 for both", ra.Status, ra.Body, rb.Status, rb.Body)
	}
	if rb.Header.Get("Idempotent-Replayed") != "" {
		t.Error("B's first request was answered as a replay of A's")
	}
	idA, idB := paymentID(t, ra.Body), paymentID(t, rb.Body)
	if idA == idB {
		t.Fatalf("A and B got the same payment %s", idA)
	}
	tests := []struct {
		merchant, id string
		want         int
	}{
		{a.merchantA, idA, http.StatusOK},
		{a.merchantB, idB, http.StatusOK},
		{a.merchantB, idA, http.StatusNotFound},
		{a.merchantA, idB, http.StatusNotFound},
	}
	for _, tt := range tests {
		if r := a.get(t, tt.merchant, tt.id); r.Status != tt.want {
			t.Errorf("GET %s as %s = %d, want %d", tt.id, tt.merchant, r.Status, tt.want)
		}
	}
	if got := a.count(t, `SELECT count(*) FROM payments WHERE idempotency_key = $1`, key); got != 2 {
		t.Errorf("%d payment rows for the shared key, want 2", got)
	}
}
