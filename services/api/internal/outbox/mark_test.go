package outbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/services/api/internal/outbox"
	"github.com/oncepay/oncepay/services/api/migrations/migrationstest"
	"github.com/prometheus/client_golang/prometheus"
)

// TestSendMarksConfirmedRowsInBatches: the rows confirmed while one marking
// UPDATE runs are marked together by the next one, and Wait returns only
// when every confirmed row is marked, each publish counted once. The first
// UPDATE is held up by a row lock, so the batches are known exactly.
func TestSendMarksConfirmedRowsInBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrationstest.NewPool(t)
	const n = 30
	msgs := pendingMessages(t, pool, n)
	topo := testTopology(t, testenv.AMQPURL(t))
	box, reg := newSweeper(t, pool, topo, outbox.Config{PublishTimeout: 5 * time.Second})
	deliveries := bindAndConsume(t, testenv.AMQPURL(t), topo.Exchange)

	lock, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, `SELECT 1 FROM outbox WHERE id = $1 FOR UPDATE`, msgs[0].ID); err != nil {
		t.Fatal(err)
	}
	box.Send(ctx, msgs[0])
	waitFor(t, "the first marking UPDATE to wait for the row lock", func() bool {
		return countRows(t, pool, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE outbox%'`) == 1
	})
	var wg sync.WaitGroup
	for _, m := range msgs[1:] {
		wg.Go(func() { box.Send(ctx, m) })
	}
	wg.Wait() // every Send has its confirm and has queued its row
	if got := countRows(t, pool, `SELECT count(*) FROM outbox WHERE published_at IS NOT NULL`); got != 0 {
		t.Fatalf("%d rows marked while the first UPDATE waits; want 0", got)
	}
	if err := lock.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := box.Wait(wctx); err != nil {
		t.Fatal(err)
	}
	if got := countRows(t, pool, `SELECT count(*) FROM outbox WHERE published_at IS NOT NULL AND attempts = 1`); got != n {
		t.Errorf("after Wait %d rows marked published with one attempt, want %d", got, n)
	}
	if count, sum := histogram(t, reg, "outbox_mark_batch_rows"); count != 2 || sum != n {
		t.Errorf("marking UPDATEs: %d marking %v rows, want 2 marking %d (1, then the %d queued behind it)", count, sum, n, n-1)
	}
	if got := len(received(deliveries, 500*time.Millisecond)); got != n {
		t.Errorf("%d messages arrived, want %d", got, n)
	}
}

// pendingMessages inserts n pending payments pay_00, pay_01, … with their
// outbox rows and returns the rows, oldest first.
func pendingMessages(t *testing.T, pool *pgxpool.Pool, n int) []outbox.Message {
	t.Helper()
	rows := make([]row, n)
	for i := range rows {
		rows[i] = row{id: fmt.Sprintf("pay_%02d", i), status: "pending"}
	}
	insertRows(t, pool, rows...)
	return outboxMessages(t, pool)
}

// outboxMessages returns every outbox row, oldest first.
func outboxMessages(t *testing.T, pool *pgxpool.Pool) []outbox.Message {
	t.Helper()
	rows, _ := pool.Query(context.Background(), `SELECT id, payment_id, merchant_id, idempotency_key, routing_key, payload, created_at
		FROM outbox ORDER BY id`)
	msgs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[outbox.Message])
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// waitFor polls cond for up to 5 s and fails the test if it never holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// histogram returns the sample count and sum of the histogram name in reg.
func histogram(t *testing.T, reg *prometheus.Registry, name string) (uint64, float64) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			h := f.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0, 0
}

// TestSendLingersBeforeMarking: rows confirmed one after the other within
// MarkLinger are marked by one UPDATE (one commit), not one each.
func TestSendLingersBeforeMarking(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrationstest.NewPool(t)
	const n = 5
	msgs := pendingMessages(t, pool, n)
	topo := testTopology(t, testenv.AMQPURL(t))
	box, reg := newSweeper(t, pool, topo, outbox.Config{PublishTimeout: 5 * time.Second, MarkLinger: 2 * time.Second})
	deliveries := bindAndConsume(t, testenv.AMQPURL(t), topo.Exchange)

	for _, m := range msgs {
		box.Send(ctx, m) // returns once the broker confirmed m
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := box.Wait(wctx); err != nil {
		t.Fatal(err)
	}
	if got := countRows(t, pool, `SELECT count(*) FROM outbox WHERE published_at IS NOT NULL AND attempts = 1`); got != n {
		t.Errorf("after Wait %d rows marked published with one attempt, want %d", got, n)
	}
	if count, sum := histogram(t, reg, "outbox_mark_batch_rows"); count != 1 || sum != n {
		t.Errorf("marking UPDATEs: %d marking %v rows, want 1 marking %d", count, sum, n)
	}
	if got := len(received(deliveries, 500*time.Millisecond)); got != n {
		t.Errorf("%d messages arrived, want %d", got, n)
	}
}
