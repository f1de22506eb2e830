package verify

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
)

// Sources are the systems a run's state is read from.
type Sources struct {
	DB     *pgxpool.Pool         // the payments database
	Redis  redis.UniversalClient // the boundary: one Redis, a failover client or a Redis Cluster
	AMQP   *amqp.Connection      // the broker
	Queues Queues                // the worker's queue names
	PSP    Ledger                // the psp simulator
	// MaxDeadLetters bounds how many dead-lettered messages are read (default 10000).
	MaxDeadLetters int
}

// Collect reads the run's payments, outbox rows, takeovers, psp charges and
// calls, boundary records, queue depths and dead-lettered messages into a
// Snapshot. The dead-letter queue is read whole: it is shared with earlier
// runs on the same runtime, and Check scopes it to the run by the run's
// payment ids. The caller adds the client's attempts, the faults and the
// drain. It fails on the first source that cannot be read.
func Collect(ctx context.Context, src Sources, runID string) (Snapshot, error) {
	s := Snapshot{RunID: runID}
	var err error
	if s.Payments, err = readPayments(ctx, src.DB, runID); err != nil {
		return Snapshot{}, err
	}
	if s.Outbox, err = readOutbox(ctx, src.DB, runID); err != nil {
		return Snapshot{}, err
	}
	if s.Takeovers, err = readTakeovers(ctx, src.DB, runID); err != nil {
		return Snapshot{}, err
	}
	ids := make(map[string]bool, len(s.Payments))
	for _, p := range s.Payments {
		ids[p.ID] = true
	}
	if s.Charges, s.PSPCalls, s.PSPCallLog, err = src.PSP.read(ctx, runID, ids); err != nil {
		return Snapshot{}, err
	}
	if s.Boundary, s.Now, err = readBoundary(ctx, src.Redis, runID); err != nil {
		return Snapshot{}, err
	}
	if s.Queues, err = queueDepths(src.AMQP, src.Queues.all()); err != nil {
		return Snapshot{}, err
	}
	limit := src.MaxDeadLetters
	if limit <= 0 {
		limit = 10000
	}
	if s.DeadLetters, err = deadLetters(src.AMQP, src.Queues.DeadLetter, limit); err != nil {
		return Snapshot{}, err
	}
	return s, nil
}

// DrainConfig bounds the drain.
type DrainConfig struct {
	Limit time.Duration // give up after this long
	Poll  time.Duration // look this often (default 1s)
	// Progress, if set, is called after every look.
	Progress func(DrainResult)
}

// Drain waits until every payment of the run is terminal, the run's outbox
// is published, the main and retry queues are empty and no boundary stage
// of the run is pending past its lease (a takeover may still be on its way),
// or until the limit passes. Payments whose message sits in the dead-letter
// queue count as drained: nothing more will happen to them (invariant 4
// fails on them). Errors reading a source are retried until the
// limit; the last one is returned with the result if the drain did not
// complete.
func Drain(ctx context.Context, src Sources, runID string, cfg DrainConfig) (DrainResult, error) {
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	start := time.Now()
	r := DrainResult{Limit: cfg.Limit}
	var lastErr error
	checkedDead := -1
	for {
		lastErr = nil
		var err error
		if r.Pending, r.Unpublished, err = progress(ctx, src.DB, runID); err != nil {
			lastErr = err
		} else if r.Queued, err = queued(src); err != nil {
			lastErr = err
		}
		r.Took = time.Since(start)
		if lastErr == nil && r.Unpublished == 0 && r.Queued == 0 {
			settled := r.Pending == 0
			if !settled && r.Pending != checkedDead {
				// Everything still pending may have been dead-lettered.
				checkedDead = r.Pending
				settled, lastErr = allDead(ctx, src, runID)
			}
			if settled && lastErr == nil {
				r.Stale, lastErr = stale(ctx, src, runID)
				r.Complete = lastErr == nil && r.Stale == 0
			}
		}
		if cfg.Progress != nil {
			cfg.Progress(r)
		}
		if r.Complete {
			return r, nil
		}
		if r.Took >= cfg.Limit {
			return r, lastErr
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(min(cfg.Poll, cfg.Limit-r.Took)):
		}
	}
}

// queued is the number of messages ready in the main and retry queues.
func queued(src Sources) (int, error) {
	qs, err := queueDepths(src.AMQP, append([]string{src.Queues.Main}, src.Queues.Retry...))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, q := range qs {
		n += q.Messages
	}
	return n, nil
}

// allDead reports whether every pending payment of the run has its message
// in the dead-letter queue.
func allDead(ctx context.Context, src Sources, runID string) (bool, error) {
	ids, err := pendingIDs(ctx, src.DB, runID)
	if err != nil {
		return false, err
	}
	limit := src.MaxDeadLetters
	if limit <= 0 {
		limit = 10000
	}
	dead, err := deadLetters(src.AMQP, src.Queues.DeadLetter, limit)
	if err != nil {
		return false, fmt.Errorf("dead letters: %w", err)
	}
	in := map[string]bool{}
	for _, d := range dead {
		in[d.MessageID] = true
	}
	for _, id := range ids {
		if !in[id] {
			return false, nil
		}
	}
	return true, nil
}

// stale counts the run's boundary stages pending past their lease.
func stale(ctx context.Context, src Sources, runID string) (int, error) {
	stages, now, err := readBoundary(ctx, src.Redis, runID)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, st := range stages {
		if st.State == "P" && !st.Lease.After(now) {
			n++
		}
	}
	return n, nil
}
