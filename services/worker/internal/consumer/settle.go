package consumer

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/services/worker/internal/metrics"
)

// settle is the one place a delivery is settled: it acks, retries,
// dead-letters or (stale session, aborted by shutdown) deliberately leaves
// it, exactly once per delivery.
func (l *Loop) settle(r result) {
	d := r.t.d
	log := l.Log.With("message_id", d.MessageId, "idempotency_key", headerString(d.Headers, "x-idempotency-key"),
		"delivery_tag", d.DeliveryTag, "attempt", r.msg.Attempt)
	switch {
	case r.err != nil && r.aborted:
		l.skip(d, metrics.SkipShutdown)
		log.Info("handler cut off by shutdown; left for redelivery", "err", r.err)
		return
	case !l.sess.live(r.t) || l.Guard.Epoch() != r.t.epoch:
		l.skip(d, metrics.SkipStale)
		log.Info("channel session lost while handling; the broker redelivers it", "outcome", r.outcome)
		return
	}

	switch {
	case r.err == nil:
		l.finish(log, r.t, r.outcome, func() error { return l.Channel.Ack(d.DeliveryTag) })
	case isReject(r.err):
		l.deadLetter(log, r.t, r.err.Error())
	case r.msg.Attempt >= l.cfg.MaxAttempts:
		log.Warn("out of attempts", "outcome", r.outcome, "err", r.err)
		l.deadLetter(log, r.t, fmt.Sprintf("out of attempts (%d): %v", r.msg.Attempt, r.err))
	default:
		q := l.retryQueue(r.msg.Attempt-1, retryAfter(r.err))
		log.Info("delayed retry", "outcome", r.outcome, "queue", q.Queue, "delay", q.Delay.String(), "err", r.err)
		l.forward(log, r.t, r.outcome, q.Queue, amqp.Table{HeaderRetryCount: int32(r.msg.Attempt)}, true) // #nosec G115 -- attempts are bounded by the delivery limit
	}
}

// retryQueue picks the retry queue for a message retried retries times so
// far: the one due for that count (the last one after that), or a later one
// if its delay is shorter than after.
func (l *Loop) retryQueue(retries int, after time.Duration) RetryQueue {
	qs := l.cfg.Retries
	i := min(retries, len(qs)-1)
	for i < len(qs)-1 && qs[i].Delay < after {
		i++
	}
	return qs[i]
}

// deadLetter sends a copy with the reason to the dead-letter queue, then
// acks; if that publish fails it rejects the delivery without requeue, so
// the queue's dead-letter exchange takes it (without the reason header).
func (l *Loop) deadLetter(log *slog.Logger, t tracked, reason string) {
	if len(reason) > 500 {
		reason = reason[:500]
	}
	log.Warn("dead-lettering", "queue", l.cfg.DeadLetter, "reason", reason)
	l.forward(log, t, metrics.DeadLettered, l.cfg.DeadLetter, amqp.Table{HeaderDeadLetterReason: reason}, false)
}

// forward publishes a copy of t's delivery to queue with confirm, THEN acks
// the original: if the worker dies in between, the broker redelivers the
// original and the copy is a harmless duplicate; never a loss. If the
// publish fails, the original is nacked instead: requeued for a retry
// (counted by the queue's delivery limit), dead-lettered by the broker
// otherwise.
func (l *Loop) forward(log *slog.Logger, t tracked, outcome, queue string, set amqp.Table, requeueOnFailure bool) {
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.PublishTimeout)
	defer cancel()
	if err := l.Publisher.Publish(ctx, queue, copyOf(t.d, set)); err != nil {
		log.Warn("forward failed; nacking the original instead", "queue", queue, "requeue", requeueOnFailure, "err", err)
		if !requeueOnFailure {
			outcome = metrics.DeadLettered
		}
		l.finish(log, t, outcome, func() error { return l.Channel.Nack(t.d.DeliveryTag, requeueOnFailure) })
		return
	}
	l.finish(log, t, outcome, func() error { return l.Channel.Ack(t.d.DeliveryTag) })
}

// finish runs the settlement through the guard and counts the outcome.
func (l *Loop) finish(log *slog.Logger, t tracked, outcome string, settle func() error) {
	ran, err := l.Guard.Do(t.epoch, settle)
	switch {
	case !ran:
		l.skip(t.d, metrics.SkipStale)
		log.Info("channel session lost before settling; the broker redelivers it", "outcome", outcome)
	case err != nil:
		// The channel is closing: the broker requeues the delivery.
		l.skip(t.d, metrics.SkipStale)
		log.Warn("settle failed; the broker redelivers it", "outcome", outcome, "err", err)
	default:
		l.Metrics.Settled(outcome)
		log.Debug("settled", "outcome", outcome)
	}
}

func headerString(h amqp.Table, name string) string {
	s, _ := h[name].(string)
	return s
}
