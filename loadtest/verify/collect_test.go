package verify_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/record"
	"github.com/oncepay/oncepay/loadtest/verify"
	"github.com/oncepay/oncepay/services/api/migrations/migrationstest"
)

// redisDB is this module's Redis database in the shared harness.
const redisDB = 4

// world is a seeded oncepay state in the real Postgres, Redis and RabbitMQ
// of the harness, plus a psp ledger served by a test server.
type world struct {
	t       *testing.T
	runID   string
	db      *pgxpool.Pool
	rdb     *redis.Client
	conn    *amqp.Connection
	queues  verify.Queues
	charges []map[string]any
	calls   []map[string]any
	psp     *httptest.Server

	attempts []record.Attempt
	faults   []fault.Event
}

func newWorld(t *testing.T) *world {
	t.Helper()
	testenv.Integration(t)
	db := migrationstest.NewPool(t)
	var err error
	w := &world{t: t, runID: strings.ReplaceAll(testenv.Name(t, "run"), "-", ""), db: db, rdb: testenv.Redis(t, redisDB)}
	t.Cleanup(func() {
		keys, _ := w.rdb.Keys(context.Background(), "idem:v1:{*:"+w.runID+"-*").Result()
		if len(keys) > 0 {
			w.rdb.Del(context.Background(), keys...)
		}
	})

	w.conn, err = amqp.Dial(testenv.AMQPURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.conn.Close() })
	w.queues = verify.DefaultQueues(testenv.Name(t, "charge"), []time.Duration{time.Second, 5 * time.Second})
	ch, err := w.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	for _, q := range append([]string{w.queues.Main, w.queues.DeadLetter}, w.queues.Retry...) {
		if _, err := ch.QueueDeclare(q, false, false, false, false, nil); err != nil {
			t.Fatalf("declare %s: %v", q, err)
		}
		t.Cleanup(func() {
			if ch, err := w.conn.Channel(); err == nil {
				_, _ = ch.QueueDelete(q, false, false, false)
				ch.Close()
			}
		})
	}

	w.psp = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/admin/ledger" {
			http.NotFound(rw, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+testPSPToken {
			http.Error(rw, "unauthorized", http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(rw).Encode(map[string]any{"calls": w.calls, "charges": w.charges})
	}))
	t.Cleanup(w.psp.Close)
	return w
}

// testPSPToken is the fake psp's admin token.
const testPSPToken = "verify-test-token"

func (w *world) key(n int) string { return fmt.Sprintf("%s-%d", w.runID, n) }

func bodyOf(id string, amount int64) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"status":"pending","amount":%d,"currency":"EUR"}`, id, amount))
}

func hash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// payment inserts a payment row with its outbox row, as the api does.
func (w *world) payment(id, merchant, key string, amount int64, status string, published bool) {
	w.t.Helper()
	ctx := context.Background()
	now := time.Now()
	var charge any
	if status == "succeeded" {
		charge = "ch_" + id
	}
	_, err := w.db.Exec(ctx, `INSERT INTO payments (id, merchant_id, idempotency_key, request_fingerprint, amount, currency,
			customer_id, status, psp_charge_id, response_status, response_body, created_at, updated_at)
		VALUES ($1, $2, $3, 'fp', $4, 'EUR', 'cus_1', $5, $6, 202, $7, $8, $8)`,
		id, merchant, key, amount, status, charge, bodyOf(id, amount), now)
	if err != nil {
		w.t.Fatalf("insert payment %s: %v", id, err)
	}
	var publishedAt any
	if published {
		publishedAt = now
	}
	if _, err := w.db.Exec(ctx, `INSERT INTO outbox (payment_id, merchant_id, idempotency_key, routing_key, payload, published_at)
		VALUES ($1, $2, $3, 'payment.initiated', '{}', $4)`, id, merchant, key, publishedAt); err != nil {
		w.t.Fatalf("insert outbox %s: %v", id, err)
	}
}

// charge records an effective psp charge for the payment.
func (w *world) charge(chargeID, paymentID, merchant, key string, amount int64) {
	w.charges = append(w.charges, map[string]any{"id": chargeID, "idempotency_key": merchant + ":" + key,
		"reference": paymentID, "amount": amount, "currency": "EUR", "customer_id": "cus_1", "created_at": time.Now()})
	w.calls = append(w.calls, map[string]any{"idempotency_key": merchant + ":" + key, "reference": paymentID, "outcome": "charged"})
}

// answer records that the client saw 2xx for the payment; its payload's
// fingerprint is "fp", as every seeded payment row's.
func (w *world) answer(merchant, key, id string, amount int64, body []byte, replayed bool) {
	w.attempts = append(w.attempts, record.Attempt{Kind: "attempt", TS: float64(time.Now().UnixMicro()) / 1000,
		Scenario: "steady", Merchant: merchant, Key: key, Amount: amount, Fingerprint: "fp", N: 1, Target: "127.0.0.1:8080", Status: 202,
		Class: record.ClassOK, PaymentID: id, BodySHA256: hash(body), Replayed: replayed, Final: true, Outcome: record.OutcomeOK})
}

// boundary writes one stage of a boundary record.
func (w *world) boundary(merchant, key, stage, state string, lease time.Time) {
	w.t.Helper()
	k := "idem:v1:{" + merchant + ":" + key + "}"
	err := w.rdb.HSet(context.Background(), k, stage+":state", state, stage+":owner", "owner-"+stage,
		stage+":lease", strconv.FormatInt(lease.UnixMilli(), 10), stage+":attempt", "1", stage+":fp", "fp").Err()
	if err != nil {
		w.t.Fatal(err)
	}
}

// deadLetter puts a message for the payment in the dead-letter queue.
func (w *world) deadLetter(paymentID string) {
	w.t.Helper()
	ch, err := w.conn.Channel()
	if err != nil {
		w.t.Fatal(err)
	}
	defer ch.Close()
	err = ch.PublishWithContext(context.Background(), "", w.queues.DeadLetter, false, false, amqp.Publishing{
		MessageId: paymentID, Body: []byte("{}"), Headers: amqp.Table{"x-first-death-reason": "delivery_limit"},
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) sources() verify.Sources {
	return verify.Sources{
		DB: w.db, Redis: w.rdb, AMQP: w.conn, Queues: w.queues,
		PSP: verify.Ledger{URL: w.psp.URL, Token: testPSPToken},
	}
}

// check drains (briefly), collects and checks the world.
func (w *world) check() verify.Report {
	w.t.Helper()
	ctx := context.Background()
	drain, err := verify.Drain(ctx, w.sources(), w.runID, verify.DrainConfig{Limit: 300 * time.Millisecond, Poll: 100 * time.Millisecond})
	if err != nil {
		w.t.Fatalf("Drain: %v", err)
	}
	s, err := verify.Collect(ctx, w.sources(), w.runID)
	if err != nil {
		w.t.Fatalf("Collect: %v", err)
	}
	s.Attempts, s.Faults, s.Drain, s.ExpectFaults = w.attempts, w.faults, drain, false
	return verify.Check(s)
}

// seedClean seeds two succeeded payments (one answered twice, identically),
// a declined one, and completed boundary records, with nothing wrong.
func (w *world) seedClean() {
	for i, m := range []string{"merchant_a", "merchant_b"} {
		id := fmt.Sprintf("pay_%s_%d", w.runID, i)
		w.payment(id, m, w.key(1), 1000, "succeeded", true) // merchant_b reuses merchant_a's key string
		w.charge("ch_"+id, id, m, w.key(1), 1000)
		w.answer(m, w.key(1), id, 1000, bodyOf(id, 1000), false)
		w.boundary(m, w.key(1), "api", "C", time.Now().Add(-time.Minute))
	}
	first := fmt.Sprintf("pay_%s_0", w.runID)
	w.answer("merchant_a", w.key(1), first, 1000, bodyOf(first, 1000), true)
	declined := "pay_" + w.runID + "_d"
	w.payment(declined, "merchant_a", w.key(2), 402, "failed", true)
	w.calls = append(w.calls, map[string]any{"idempotency_key": "merchant_a:" + w.key(2), "reference": declined, "outcome": "declined"})
	w.answer("merchant_a", w.key(2), declined, 402, bodyOf(declined, 402), false)
}

func TestCollectCleanStatePasses(t *testing.T) {
	w := newWorld(t)
	w.seedClean()
	r := w.check()
	if !r.Pass {
		var b strings.Builder
		_ = r.WriteText(&b)
		t.Fatalf("clean state fails:\n%s", b.String())
	}
	if r.Payments != (verify.Payments{Total: 3, Succeeded: 2, Failed: 1}) {
		t.Errorf("payments = %+v", r.Payments)
	}
	if r.PSP.Charges != 2 || r.PSP.ByOutcome["declined"] != 1 {
		t.Errorf("psp = %+v, want 2 charges and 1 decline", r.PSP)
	}
	if r.Boundary.Records != 2 || r.Boundary.Completed != 2 {
		t.Errorf("boundary = %+v, want 2 completed records", r.Boundary)
	}
	if !r.Drain.Complete {
		t.Errorf("drain = %+v, want complete", r.Drain)
	}
	if r.Requests.Replays != 1 {
		t.Errorf("replays = %d, want 1", r.Requests.Replays)
	}
}

func TestCollectCatchesViolations(t *testing.T) {
	tests := []struct {
		name string
		seed func(w *world) []verify.Violation // seeds the fault, returns the violations expected
	}{
		{"double charge", func(w *world) []verify.Violation {
			id := fmt.Sprintf("pay_%s_0", w.runID)
			w.charge("ch_again", id, "merchant_a", w.key(1), 1000)
			return []verify.Violation{
				{Invariant: 3, Kind: verify.KindDoubleCharge, IDs: []string{id, "ch_" + id, "ch_again"}},
				{Invariant: 7, Kind: verify.KindNotLinearizable, IDs: []string{"merchant_a:" + w.key(1)}},
			}
		}},
		{"lost payment", func(w *world) []verify.Violation {
			w.answer("merchant_a", w.key(7), "pay_lost", 500, bodyOf("pay_lost", 500), false)
			return []verify.Violation{
				{Invariant: 1, Kind: verify.KindLostPayment, IDs: []string{"pay_lost", "merchant_a:" + w.key(7)}},
				{Invariant: 7, Kind: verify.KindNotLinearizable, IDs: []string{"merchant_a:" + w.key(7)}},
			}
		}},
		{"stuck pending payment", func(w *world) []verify.Violation {
			id := "pay_" + w.runID + "_stuck"
			w.payment(id, "merchant_b", w.key(8), 800, "pending", true)
			return []verify.Violation{{Invariant: 4, Kind: verify.KindStuckPending, IDs: []string{id, "merchant_b:" + w.key(8)}}}
		}},
		{"boundary record pending past its lease", func(w *world) []verify.Violation {
			w.boundary("merchant_a", w.key(1), "charge", "P", time.Now().Add(-5*time.Second))
			return []verify.Violation{{Invariant: 5, Kind: verify.KindStaleBoundary, IDs: []string{"idem:v1:{merchant_a:" + w.key(1) + "}", "charge"}}}
		}},
		{"mismatched replay", func(w *world) []verify.Violation {
			id := fmt.Sprintf("pay_%s_1", w.runID)
			changed := []byte(`{"id":"` + id + `","status":"succeeded"}`)
			w.answer("merchant_b", w.key(1), id, 1000, changed, true)
			k := "merchant_b:" + w.key(1)
			hashes := []string{"sha256:" + hash(changed)[:12], "sha256:" + hash(bodyOf(id, 1000))[:12]}
			slices.Sort(hashes)
			return []verify.Violation{
				{Invariant: 2, Kind: verify.KindReplayDiffers, IDs: append([]string{k}, hashes...)},
				{Invariant: 2, Kind: verify.KindStoredDiffers, IDs: []string{id, k}},
				{Invariant: 7, Kind: verify.KindNotLinearizable, IDs: []string{k}},
			}
		}},
		{"unpublished outbox row", func(w *world) []verify.Violation {
			id := "pay_" + w.runID + "_unpub"
			w.payment(id, "merchant_a", w.key(9), 900, "succeeded", false)
			w.charge("ch_"+id, id, "merchant_a", w.key(9), 900)
			var outboxID int64
			if err := w.db.QueryRow(context.Background(), `SELECT id FROM outbox WHERE payment_id = $1`, id).Scan(&outboxID); err != nil {
				w.t.Fatal(err)
			}
			return []verify.Violation{{Invariant: 5, Kind: verify.KindUnpublishedOutbox, IDs: []string{strconv.FormatInt(outboxID, 10), id}}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.seedClean()
			want := tt.seed(w)
			r := w.check()
			for i := range r.Violations {
				r.Violations[i].Detail = ""
			}
			if diff := cmp.Diff(want, r.Violations); diff != "" {
				var b strings.Builder
				_ = r.WriteText(&b)
				t.Errorf("violations (-want +got):\n%s\nreport:\n%s", diff, b.String())
			}
			if r.Pass {
				t.Error("Pass = true with a seeded violation")
			}
		})
	}
}

func TestDrain(t *testing.T) {
	w := newWorld(t)
	w.seedClean()
	pending := "pay_" + w.runID + "_p"
	w.payment(pending, "merchant_a", w.key(3), 300, "pending", true)
	ctx := context.Background()

	r, err := verify.Drain(ctx, w.sources(), w.runID, verify.DrainConfig{Limit: 500 * time.Millisecond, Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Complete || r.Pending != 1 || r.Took < 500*time.Millisecond {
		t.Errorf("drain with a pending payment = %+v, want incomplete after the limit with 1 pending", r)
	}

	// Once the payment's message is dead-lettered, the drain is complete
	// (nothing more will happen to it) and invariant 4 fails on it; a
	// message of an earlier run's payment in the same queue is counted
	// apart and not judged.
	w.deadLetter(pending)
	w.deadLetter("pay_of_an_earlier_run")
	r, err = verify.Drain(ctx, w.sources(), w.runID, verify.DrainConfig{Limit: 5 * time.Second, Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Complete {
		t.Errorf("drain with the pending payment dead-lettered = %+v, want complete", r)
	}
	rep := w.check()
	wantV := []verify.Violation{{Invariant: 4, Kind: verify.KindDeadLettered, IDs: []string{pending, "merchant_a:" + w.key(3)}}}
	for i := range rep.Violations {
		rep.Violations[i].Detail = ""
	}
	if diff := cmp.Diff(wantV, rep.Violations); diff != "" {
		t.Errorf("violations with a dead-lettered payment (-want +got):\n%s", diff)
	}
	if rep.Pass || rep.Payments.DeadLettered != 1 || rep.EarlierDeadLetters != 1 || len(rep.DeadLetter) != 1 || rep.DeadLetter[0] != (verify.DeadLetter{MessageID: pending, Reason: "delivery_limit"}) {
		t.Errorf("report: pass %v, payments %+v, dead letters %+v, earlier %d; want a failure listing %s as dead-lettered and 1 earlier",
			rep.Pass, rep.Payments, rep.DeadLetter, rep.EarlierDeadLetters, pending)
	}

	// A message waiting in a retry queue keeps the drain going.
	ch, _ := w.conn.Channel()
	defer ch.Close()
	if err := ch.PublishWithContext(ctx, "", w.queues.Retry[0], false, false, amqp.Publishing{MessageId: "x", Body: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	r, _ = verify.Drain(ctx, w.sources(), w.runID, verify.DrainConfig{Limit: 200 * time.Millisecond, Poll: 100 * time.Millisecond})
	if r.Complete || r.Queued != 1 {
		t.Errorf("drain with a queued message = %+v, want incomplete with 1 queued", r)
	}
}

// TestCollectStoryFields checks what the payment stories of report.html
// read besides the checks: every psp call of the run and the outbox rows'
// times.
func TestCollectStoryFields(t *testing.T) {
	w := newWorld(t)
	w.seedClean()
	s, err := verify.Collect(context.Background(), w.sources(), w.runID)
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	var calls []string
	for _, c := range s.PSPCallLog {
		calls = append(calls, c.Outcome+" "+c.Reference)
	}
	want := []string{"charged pay_" + w.runID + "_0", "charged pay_" + w.runID + "_1", "declined pay_" + w.runID + "_d"}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("psp calls (-want +got):\n%s", diff)
	}
	if len(s.Outbox) != 3 {
		t.Fatalf("%d outbox rows, want 3", len(s.Outbox))
	}
	for _, o := range s.Outbox {
		if o.CreatedAt.IsZero() || !o.Published || o.PublishedAt.IsZero() || !o.RepublishedAt.IsZero() {
			t.Errorf("outbox row %+v: want its creation and publication times, no republication", o)
		}
	}
}
