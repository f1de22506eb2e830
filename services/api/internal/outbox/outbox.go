package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncepay/oncepay/services/api/internal/metrics"
)

// Config tunes an Outbox. Zero fields take the documented defaults.
type Config struct {
	// RelayInterval is the pause between relay passes. Default 1s.
	RelayInterval time.Duration
	// RelayAge: the relay republishes rows unpublished for longer than this
	// (rows younger than it are left to the inline publish). Zero relays
	// every unpublished row.
	RelayAge time.Duration
	// PublishTimeout bounds one publish and its confirm. Default 1s.
	PublishTimeout time.Duration
	// BatchSize is the most rows one relay or sweep pass takes. Default 100.
	BatchSize int

	// SweepInterval is the pause between passes of the pending-payment
	// sweeper (SweepOnce). Zero turns the sweeper off.
	SweepInterval time.Duration
	// SweepAge: the sweeper publishes again the message of a payment that
	// is still pending when its last publish is older than this. Default
	// 60s.
	SweepAge time.Duration
	// SweepLimit is how often the sweeper publishes one payment's message
	// again, at most. Default 3.
	SweepLimit int

	// MarkLinger is how long the marking goroutine waits before each
	// marking UPDATE, so that one statement (one commit) marks the rows
	// confirmed meanwhile. Nothing waits for the mark but Wait: the
	// request has its confirm already. Default 50ms; it must stay well
	// below RelayAge, or the relay publishes rows again that are only
	// waiting to be marked.
	MarkLinger time.Duration
}

// markTimeout bounds the UPDATE that records a publish attempt.
const markTimeout = 2 * time.Second

// maxMarkBatch is the most rows one UPDATE marks published.
const maxMarkBatch = 500

// Outbox publishes committed outbox rows: at once after the commit (Send)
// and, for whatever that missed, from the relay loop (Run). It is safe for
// concurrent use.
type Outbox struct {
	pool     *pgxpool.Pool
	pub      *Publisher
	metrics  *metrics.Metrics
	log      *slog.Logger
	cfg      Config
	inflight sync.WaitGroup // inline publishes and the marking goroutine

	markMu  sync.Mutex
	marks   []int64 // confirmed rows not yet marked published
	marking bool    // a markBatches goroutine is running
}

// New returns an Outbox over the rows in pool, publishing with pub.
func New(pool *pgxpool.Pool, pub *Publisher, m *metrics.Metrics, log *slog.Logger, cfg Config) *Outbox {
	if cfg.RelayInterval <= 0 {
		cfg.RelayInterval = time.Second
	}
	if cfg.PublishTimeout <= 0 {
		cfg.PublishTimeout = time.Second
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 100
	}
	if cfg.SweepAge <= 0 {
		cfg.SweepAge = time.Minute
	}
	if cfg.SweepLimit <= 0 {
		cfg.SweepLimit = 3
	}
	if cfg.MarkLinger <= 0 {
		cfg.MarkLinger = 50 * time.Millisecond
	}
	return &Outbox{pool: pool, pub: pub, metrics: m, log: log, cfg: cfg}
}

// Send publishes the committed row m right away and waits for its confirm:
// Start(ctx, m)().
func (o *Outbox) Send(ctx context.Context, m Message) { o.Start(ctx, m)() }

// Start publishes the committed row m right away, in the background, and
// returns wait, which waits for the broker's confirm, at most until
// PublishTimeout after Start. On a positive confirm the row is marked
// published, in a batch with the other rows confirmed meanwhile (see
// markLater). A failure is recorded on the row (attempts, last_error) and
// left to the relay. Neither Start nor wait fails the caller: the publish
// goes on in the background if the broker is slow, and the marking always
// does (Wait waits for both). Cancelling ctx does not abort it. The caller
// may do other work between Start and wait (the api ends its boundary
// stage while the confirm is on its way).
func (o *Outbox) Start(ctx context.Context, m Message) (wait func()) {
	ctx = context.WithoutCancel(ctx)
	done := make(chan struct{})
	o.inflight.Add(1)
	go func() {
		defer o.inflight.Done()
		defer close(done)
		err := o.publish(ctx, m, metrics.PathInline)
		if err != nil {
			o.log.Warn("outbox: publish after commit failed; the relay will retry",
				"payment_id", m.PaymentID, "outbox_id", m.ID, "err", err)
			mctx, cancel := context.WithTimeout(ctx, markTimeout)
			defer cancel()
			o.recordFailure(mctx, o.pool, m, err)
			return
		}
		o.markLater(m.ID)
	}()
	deadline := time.Now().Add(o.cfg.PublishTimeout)
	return func() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
		}
	}
}

// markLater queues confirmed row id to be marked published. One goroutine
// at a time marks the queue: it waits MarkLinger, takes every id queued so
// far and marks them with one UPDATE, then waits again for the ids that
// arrive meanwhile, and so on until the queue is empty (group commit). A
// lone payment is marked MarkLinger after its confirm; under load one
// statement marks many. The caller must hold an
// inflight count, so that Wait also waits for the marking.
func (o *Outbox) markLater(id int64) {
	o.markMu.Lock()
	o.marks = append(o.marks, id)
	start := !o.marking
	o.marking = true
	if start {
		o.inflight.Add(1)
	}
	o.markMu.Unlock()
	if start {
		go o.markBatches()
	}
}

// markBatches marks queued rows until the queue is empty. A row whose
// UPDATE fails stays unpublished: the relay publishes it again (a
// duplicate message, which the worker's boundary absorbs).
func (o *Outbox) markBatches() {
	defer o.inflight.Done()
	for {
		time.Sleep(o.cfg.MarkLinger)
		o.markMu.Lock()
		n := min(len(o.marks), maxMarkBatch)
		if n == 0 {
			o.marks, o.marking = nil, false
			o.markMu.Unlock()
			return
		}
		ids := o.marks[:n:n]
		o.marks = o.marks[n:]
		o.markMu.Unlock()

		ctx, cancel := context.WithTimeout(context.Background(), markTimeout)
		err := markPublished(ctx, o.pool, ids...)
		cancel()
		if err != nil {
			o.log.Warn("outbox: published but not marked; the relay will publish again",
				"rows", len(ids), "first_outbox_id", ids[0], "err", err)
			continue
		}
		o.metrics.OutboxMarkBatch.Observe(float64(len(ids)))
	}
}

// Wait waits until every publish started by Send has ended and its row is
// marked, or ctx ends.
func (o *Outbox) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		o.inflight.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("outbox: wait for inline publishes: %w", ctx.Err())
	}
}

// publish sends one message within PublishTimeout and records metrics.
func (o *Outbox) publish(ctx context.Context, m Message, path string) error {
	ctx, cancel := context.WithTimeout(ctx, o.cfg.PublishTimeout)
	defer cancel()
	start := time.Now()
	if err := o.pub.Publish(ctx, m); err != nil {
		o.metrics.OutboxFailures.Inc()
		return err
	}
	o.metrics.OutboxPublishDuration.Observe(time.Since(start).Seconds())
	o.metrics.OutboxPublished.WithLabelValues(path).Inc()
	return nil
}

// execer is what the marking statements need: a pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// markPublished marks rows ids published, counting the attempt, in one
// statement. Rows already marked are left alone.
func markPublished(ctx context.Context, db execer, ids ...int64) error {
	_, err := db.Exec(ctx, `UPDATE outbox SET published_at = now(), attempts = attempts + 1
		WHERE id = ANY($1) AND published_at IS NULL`, ids)
	if err != nil {
		return fmt.Errorf("mark %d outbox rows published: %w", len(ids), err)
	}
	return nil
}

func (o *Outbox) recordFailure(ctx context.Context, db execer, m Message, cause error) {
	_, err := db.Exec(ctx, `UPDATE outbox SET attempts = attempts + 1, last_error = $2
		WHERE id = $1 AND published_at IS NULL`, m.ID, cause.Error())
	if err != nil {
		o.log.Warn("outbox: record failed publish", "outbox_id", m.ID, "err", err)
	}
}
