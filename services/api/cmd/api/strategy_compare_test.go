//go:build compare

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/idem/naive"
)

// TestComparisonStrategiesAreLoud: an api started with a demonstration
// strategy says so at WARN and in every /readyz answer; the default says
// nothing.
func TestComparisonStrategiesAreLoud(t *testing.T) {
	t.Parallel()
	for _, s := range naive.Strategies() {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			a := startAPI(t, apiOptions{env: map[string]string{"IDEM_STRATEGY": string(s)}})
			r := a.opsGet(t, "/readyz")
			var rep struct {
				Details map[string]string `json:"details"`
			}
			if err := json.Unmarshal(r.Body, &rep); err != nil {
				t.Fatal(err)
			}
			warned := a.logs.index(s.Warning(), map[string]any{"level": "WARN", "idem_strategy": string(s)}) >= 0
			if s.Real() {
				if rep.Details != nil || warned {
					t.Errorf("the real boundary: readyz details %v, warned %v; want neither", rep.Details, warned)
				}
				return
			}
			if rep.Details["idempotency_strategy"] != string(s) || rep.Details["warning"] != s.Warning() {
				t.Errorf("readyz details = %v, want the strategy and its warning", rep.Details)
			}
			if !warned {
				t.Errorf("no WARN line %q in the logs", s.Warning())
			}
		})
	}
}

// TestNoBackstopDuplicatesAfterRedisFlush: without the unique-key backstop,
// Redis data loss turns a retry into a second payment (compare
// TestBackstopAfterRedisFlush, where the database answers with the first).
// It flushes this module's Redis database, so it does not run in parallel.
func TestNoBackstopDuplicatesAfterRedisFlush(t *testing.T) {
	a := startAPI(t, apiOptions{env: map[string]string{"IDEM_STRATEGY": "no-backstop"}})
	key := testenv.Name(t, "k")
	first := a.post(t, a.merchantA, key, paymentBody)
	if first.Status != http.StatusAccepted {
		t.Fatalf("first: %d %s", first.Status, first.Body)
	}
	if err := a.rdb.FlushDB(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	retry := a.post(t, a.merchantA, key, paymentBody)
	if retry.Status != http.StatusAccepted || retry.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("retry after FLUSHDB: %d %s (replayed %q), want a fresh 202", retry.Status, retry.Body, retry.Header.Get("Idempotent-Replayed"))
	}
	if paymentID(t, retry.Body) == paymentID(t, first.Body) {
		t.Fatal("the retry got the first payment: the backstop answered")
	}
	n := a.count(t, `SELECT count(*) FROM payments WHERE merchant_id = $1 AND (idempotency_key = $2 OR idempotency_key LIKE $2 || '~dup-%')`, a.merchantA, key)
	if n != 2 {
		t.Errorf("%d payments for one key, want 2: the retry became a second payment", n)
	}
	if m := a.count(t, `SELECT count(*) FROM outbox WHERE merchant_id = $1 AND idempotency_key LIKE $2 || '%'`, a.merchantA, key); m != 2 {
		t.Errorf("%d outbox rows, want 2: the second payment is charged like any other", m)
	}
}

// TestGetThenSetConcurrentRequestsMeetTheBackstop: with get-then-set every
// concurrent duplicate runs the insert; the unique constraint is what keeps
// it to one payment, answering the others with the first answer (compare
// TestConcurrentIdenticalRequests, where the boundary lets one through).
func TestGetThenSetConcurrentRequestsMeetTheBackstop(t *testing.T) {
	t.Parallel()
	a := startAPI(t, apiOptions{env: map[string]string{"IDEM_STRATEGY": "get-then-set"}})
	key := testenv.Name(t, "k")
	const n = 30
	answers := a.postAtOnce(t, key, n)
	for _, r := range answers {
		if r.Status != http.StatusAccepted || !bytes.Equal(r.Body, answers[0].Body) {
			t.Fatalf("answer %d %s, want every answer the same 202 %s", r.Status, r.Body, answers[0].Body)
		}
	}
	if got := a.count(t, `SELECT count(*) FROM payments WHERE merchant_id = $1 AND idempotency_key = $2`, a.merchantA, key); got != 1 {
		t.Errorf("%d payment rows, want 1 (the backstop)", got)
	}
	if got := a.metric(t, `payments_backstop_total{result="replayed"}`); got < 1 {
		t.Errorf(`payments_backstop_total{result="replayed"} = %v; want the backstop to have answered duplicates that get-then-set let through`, got)
	}
	t.Logf("the database backstop answered %v of %d concurrent duplicates", a.metric(t, `payments_backstop_total{result="replayed"}`), n)
}
