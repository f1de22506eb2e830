package consumer

import (
	"context"
	"log/slog"
	"math"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/services/worker/internal/metrics"
)

// settle is the one place a delivery is settled: it acks, retries,
// dead-letters or (stale session, aborted by shutdown) deliberately leaves
// it, exactly once per delivery. Only a rejected message (consumer.Reject:
// undecodable or invalid) is dead-lettered; every other failure is retried
// through the retry queues, at the last delay once the others are used up,
// without limit.
func (l *Loop) settle(r result) {
	d := r.t.d
	log := l.Log.With("message_id", d.MessageId, "idempotency_key", headerString(d.Headers, message.HeaderIdempotencyKey),
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
		l.ack(log, r.t, r.outcome)
	case isReject(r.err):
		l.deadLetter(log, r.t, r.err.Error())
	default:
		// A retryable failure may hide a charge whose outcome is unknown:
		// it is retried for as long as it fails, never dead-lettered.
		q := l.retryQueue(r.msg.Attempt-1, retryAfter(r.err))
		level := slog.LevelInfo
		if r.msg.Attempt > len(l.cfg.Retries) {
			level = slog.LevelWarn // the delays are used up: retrying at the last one
		}
		log.Log(context.Background(), level, "delayed retry", "outcome", r.outcome, "queue", q.Queue, "delay", q.Delay.String(), "err", r.err)
		l.forward(log, r.t, r.outcome, q.Queue, amqp.Table{HeaderRetryCount: int32(min(r.msg.Attempt, math.MaxInt32))}, true)
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
// original and the copy is a harmless duplicate; never a loss. A copy is a
// new message to the broker: the main queue's delivery limit counts its
// returns from zero, so a message that only ever goes through the retry
// queues is never dead-lettered by the broker. If the publish fails, the
// original is nacked instead: requeued for a retry (a return that the
// delivery limit counts), dead-lettered by the broker otherwise.
func (l *Loop) forward(log *slog.Logger, t tracked, outcome, queue string, set amqp.Table, requeueOnFailure bool) {
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.PublishTimeout)
	defer cancel()
	if err := l.Publisher.Publish(ctx, queue, copyOf(t.d, set)); err != nil {
		log.Warn("forward failed; nacking the original instead", "queue", queue, "requeue", requeueOnFailure, "err", err)
		if !requeueOnFailure {
			outcome = metrics.DeadLettered
		}
		l.acks.decided(t)
		l.finish(log, t, outcome, func() error { return l.Channel.Nack(t.d.DeliveryTag, requeueOnFailure) })
		return
	}
	l.ack(log, t, outcome)
}

// ack acks t: at once with AckDelay 0, else queued for a multiple ack.
func (l *Loop) ack(log *slog.Logger, t tracked, outcome string) {
	if l.cfg.AckDelay <= 0 {
		l.acks.decided(t)
		l.finish(log, t, outcome, func() error { return l.Channel.Ack(t.d.DeliveryTag, false) })
		return
	}
	l.acks.queue(t, outcome)
}

// sendAcks sends acks through the guard of their session and counts what
// they settle.
func (l *Loop) sendAcks(acks []sent) {
	for _, a := range acks {
		ran, err := l.Guard.Do(l.acks.epoch, func() error { return l.Channel.Ack(a.tag, a.multiple) })
		for _, r := range a.settles {
			switch {
			case !ran:
				l.skip(r.t.d, metrics.SkipStale)
				l.Log.Info("channel session lost before acking; the broker redelivers it", "message_id", r.t.d.MessageId, "outcome", r.outcome)
			case err != nil:
				l.skip(r.t.d, metrics.SkipStale)
				l.Log.Warn("ack failed; the broker redelivers it", "message_id", r.t.d.MessageId, "outcome", r.outcome, "err", err)
			default:
				l.Metrics.Settled(r.outcome)
			}
		}
	}
}

// dropAcks counts the acks a new session made stale: the broker requeued
// their deliveries when the old session ended.
func (l *Loop) dropAcks(dropped []readyAck) {
	for _, r := range dropped {
		l.skip(r.t.d, metrics.SkipStale)
		l.Log.Info("channel session lost before acking; the broker redelivers it", "message_id", r.t.d.MessageId, "outcome", r.outcome)
	}
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
