package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/idem"
)

// TestKeyReusedAfterBoundaryLoss: payment P exists for a key, and Redis no
// longer holds the key's api stage. A request with the key and another
// body gets 422 from the database backstop; that 422 must not be recorded
// under its fingerprint: the original request's retry still replays P's
// first answer byte for byte, the intruder's retries keep getting 422, and
// the stage holds P's fingerprint and answer (Redis repaired to the
// database's truth).
func TestKeyReusedAfterBoundaryLoss(t *testing.T) {
	t.Parallel()
	a := startAPI(t, apiOptions{})
	ctx := context.Background()
	losses := []struct {
		name string
		lose func(t *testing.T, hash string)
	}{
		// FLUSHALL, a failover to a replica that was behind, retention expiry.
		{"key deleted", func(t *testing.T, hash string) {
			if err := a.rdb.Del(ctx, hash).Err(); err != nil {
				t.Fatal(err)
			}
		}},
		// A 5xx after the commit: the stage was released (release.lua).
		{"stage released", func(t *testing.T, hash string) {
			if err := a.rdb.HDel(ctx, hash, "api:state", "api:fp", "api:lease").Err(); err != nil {
				t.Fatal(err)
			}
		}},
		// The holder died after its commit, before completing the stage:
		// the other body takes the expired claim over and loses at the
		// database backstop.
		{"holder died after its commit", func(t *testing.T, hash string) {
			if err := a.rdb.HSet(ctx, hash, "api:state", "P", "api:owner", "dead",
				"api:lease", time.Now().Add(-time.Second).UnixMilli()).Err(); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, loss := range losses {
		t.Run(loss.name, func(t *testing.T) {
			key := testenv.Name(t, "k")
			k, err := idem.NewKey(a.merchantA, key)
			if err != nil {
				t.Fatal(err)
			}
			bodyA, bodyB := paymentBody, strings.Replace(paymentBody, "1250", "999", 1)

			first := a.post(t, a.merchantA, key, bodyA)
			if first.Status != http.StatusAccepted {
				t.Fatalf("first request: %d %s", first.Status, first.Body)
			}
			loss.lose(t, k.String())

			if r := a.post(t, a.merchantA, key, bodyB); r.Status != http.StatusUnprocessableEntity {
				t.Fatalf("other body after the loss: %d %s, want 422", r.Status, r.Body)
			}
			for i := range 2 {
				r := a.post(t, a.merchantA, key, bodyA)
				if r.Status != first.Status || !bytes.Equal(r.Body, first.Body) ||
					r.Header.Get("Location") != first.Header.Get("Location") ||
					r.Header.Get("Content-Type") != first.Header.Get("Content-Type") {
					t.Fatalf("original's retry %d: %d %s (Location %q), want the first answer %d %s (Location %q)",
						i+1, r.Status, r.Body, r.Header.Get("Location"), first.Status, first.Body, first.Header.Get("Location"))
				}
				if r.Header.Get("Idempotent-Replayed") != "true" {
					t.Errorf("original's retry %d has no Idempotent-Replayed: true", i+1)
				}
				if r := a.post(t, a.merchantA, key, bodyB); r.Status != http.StatusUnprocessableEntity {
					t.Fatalf("intruder's retry %d: %d %s, want 422", i+1, r.Status, r.Body)
				}
			}

			var fingerprint string
			if err := a.pool.QueryRow(ctx, `SELECT request_fingerprint FROM payments WHERE merchant_id = $1 AND idempotency_key = $2`,
				a.merchantA, key).Scan(&fingerprint); err != nil {
				t.Fatal(err)
			}
			fields, err := a.rdb.HGetAll(ctx, k.String()).Result()
			if err != nil {
				t.Fatal(err)
			}
			if fields["api:fp"] != fingerprint || fields["api:state"] != "C" {
				t.Errorf("HGETALL %s = %v, want api:state C and api:fp %s (the payment's)", k, fields, fingerprint)
			}
			var stored idem.Response
			if err := stored.UnmarshalBinary([]byte(fields["api:result"])); err != nil {
				t.Fatal(err)
			}
			if stored.Status != first.Status || !bytes.Equal(stored.Body, first.Body) {
				t.Errorf("stored answer %d %s, want the first %d %s", stored.Status, stored.Body, first.Status, first.Body)
			}
			if got := a.count(t, `SELECT count(*) FROM payments WHERE idempotency_key = $1`, key); got != 1 {
				t.Errorf("%d payment rows, want 1", got)
			}
		})
	}
	// The original's retries were replayed from the repaired stage, not by
	// the backstop.
	if got := a.metric(t, `payments_backstop_total{result="replayed"}`); got > 0 {
		t.Errorf(`payments_backstop_total{result="replayed"} = %v, want 0`, got)
	}
}

// TestExpiredClaimWithNothingCommitted: a request claimed a key and died
// before its payment was committed; its claim expired. Nothing was ever
// accepted for the key, so a request with another body takes it over and
// is accepted (202), and from then on the key is that payment's: the first
// body gets 422.
func TestExpiredClaimWithNothingCommitted(t *testing.T) {
	t.Parallel()
	a := startAPI(t, apiOptions{})
	ctx := context.Background()
	key := testenv.Name(t, "k")
	k, err := idem.NewKey(a.merchantA, key)
	if err != nil {
		t.Fatal(err)
	}
	bodyA, bodyB := paymentBody, strings.Replace(paymentBody, "1250", "999", 1)
	fpA, err := idem.Fingerprint(http.MethodPost, "/v1/payments", []byte(bodyA))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.rdb.HSet(ctx, k.String(), "api:state", "P", "api:owner", "dead", "api:fp", fpA,
		"api:lease", time.Now().Add(-time.Second).UnixMilli(), "api:attempt", 1).Err(); err != nil {
		t.Fatal(err)
	}
	r := a.post(t, a.merchantA, key, bodyB)
	if r.Status != http.StatusAccepted {
		t.Fatalf("other body after the dead holder's lease: %d %s, want 202 (nothing was accepted for the key)", r.Status, r.Body)
	}
	if again := a.post(t, a.merchantA, key, bodyB); again.Status != r.Status || !bytes.Equal(again.Body, r.Body) {
		t.Errorf("its retry: %d %s, want %d %s replayed", again.Status, again.Body, r.Status, r.Body)
	}
	if first := a.post(t, a.merchantA, key, bodyA); first.Status != http.StatusUnprocessableEntity {
		t.Errorf("the dead holder's body now: %d %s, want 422", first.Status, first.Body)
	}
	if got := a.count(t, `SELECT count(*) FROM payments WHERE idempotency_key = $1 AND amount = 999`, key); got != 1 {
		t.Errorf("%d payment rows of the second body, want 1", got)
	}
}

// TestOriginalRetryWhileAnotherRequestHoldsTheStage: after Redis lost a
// key, the stage holds another request's fingerprint.
//
//   - That request is still working (its backstop has not repaired the
//     stage yet): the original request's retry is told to retry later
//     (409 + Retry-After: a request is in flight on the key), and once the
//     other request repaired the stage to the original's answer, as its
//     backstop does, the retry replays that answer.
//   - Its 422 was recorded under its fingerprint: the original's retry
//     gets MISMATCH from Redis, but the database shows the key's payment
//     is its own: it is answered with the payment's first answer, not 422.
func TestOriginalRetryWhileAnotherRequestHoldsTheStage(t *testing.T) {
	t.Parallel()
	a := startAPI(t, apiOptions{})
	ctx := context.Background()
	other := idem.New(a.rdb, idem.Config{Lease: 10 * time.Second})
	bodyA, bodyB := paymentBody, strings.Replace(paymentBody, "1250", "999", 1)
	fpA, err := idem.Fingerprint(http.MethodPost, "/v1/payments", []byte(bodyA))
	if err != nil {
		t.Fatal(err)
	}
	fpB, err := idem.Fingerprint(http.MethodPost, "/v1/payments", []byte(bodyB))
	if err != nil {
		t.Fatal(err)
	}
	states := []struct {
		name string
		// hold makes the other request hold the stage and returns what it
		// does when it ends (nil: nothing more).
		hold func(t *testing.T, k idem.Key, first response) (end func(t *testing.T))
	}{
		{"the other request in flight", func(t *testing.T, k idem.Key, first response) func(t *testing.T) {
			c, err := other.Begin(ctx, k, "api", fpB)
			if err != nil {
				t.Fatal(err)
			}
			return func(t *testing.T) {
				r := idem.Response{Status: first.Status, Body: first.Body, Header: http.Header{
					"Content-Type": {first.Header.Get("Content-Type")}, "Location": {first.Header.Get("Location")}}}
				result, err := r.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Lease.CompleteAs(ctx, fpA, result); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"the other request's 422 recorded", func(t *testing.T, k idem.Key, _ response) func(t *testing.T) {
			c, err := other.Begin(ctx, k, "api", fpB)
			if err != nil {
				t.Fatal(err)
			}
			result, _ := idem.Response{Status: http.StatusUnprocessableEntity, Body: []byte(`{}`)}.MarshalBinary()
			if err := c.Lease.Complete(ctx, result); err != nil {
				t.Fatal(err)
			}
			return nil
		}},
	}
	for _, st := range states {
		t.Run(st.name, func(t *testing.T) {
			key := testenv.Name(t, "k")
			k, _ := idem.NewKey(a.merchantA, key)
			first := a.post(t, a.merchantA, key, bodyA)
			if first.Status != http.StatusAccepted {
				t.Fatalf("first request: %d %s", first.Status, first.Body)
			}
			if err := a.rdb.Del(ctx, k.String()).Err(); err != nil {
				t.Fatal(err)
			}
			if end := st.hold(t, k, first); end != nil {
				if r := a.post(t, a.merchantA, key, bodyA); r.Status != http.StatusConflict || r.Header.Get("Retry-After") == "" {
					t.Errorf("original's retry while the other request is in flight: %d %s (Retry-After %q), want 409 with Retry-After",
						r.Status, r.Body, r.Header.Get("Retry-After"))
				}
				end(t)
			}
			r := a.post(t, a.merchantA, key, bodyA)
			if r.Status != first.Status || !bytes.Equal(r.Body, first.Body) ||
				r.Header.Get("Location") != first.Header.Get("Location") || r.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("original's retry: %d %s (Location %q, replayed %q), want the first answer %s (Location %q) replayed",
					r.Status, r.Body, r.Header.Get("Location"), r.Header.Get("Idempotent-Replayed"), first.Body, first.Header.Get("Location"))
			}
		})
	}
}
