// Package consumer runs the worker's consume loop: a bounded pool of
// handler goroutines, and one loop that settles every delivery exactly once
// (ack, delayed retry, dead-letter) or, on purpose, not at all (a delivery of
// a lost channel session, or one cut off by shutdown; the broker requeues
// those).
//
// Handlers do not touch AMQP. They return an error, and the loop decides:
//
//	nil                  ack
//	Retry(err, after)    publish a copy to a retry queue (with confirm), then ack;
//	                     after the last delay, the last queue again, without limit
//	Reject(err)          publish a copy to the dead-letter queue (with confirm), then ack
//	any other error      like Retry(err, 0)
//
// A retry never requeues the message hot: it waits out a retry queue's TTL.
// The dead-letter queue is for poison messages only (Reject): a retryable
// failure may be a charge whose outcome is unknown, and it is retried, never
// parked.
package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Message is what a Handler sees of a delivery.
type Message struct {
	ID          string     // AMQP message-id (the payment id)
	Headers     amqp.Table // AMQP headers, read only
	Body        []byte
	Redelivered bool // the broker delivered it before (redelivered flag or x-delivery-count > 0)
	Attempt     int  // 1 for the first delivery through this queue, +1 per delayed retry
}

// Handler handles one message. The outcome is a worker_messages_total label
// (see package metrics); the error decides how the loop settles the
// delivery (see the package documentation). Handle is called concurrently;
// when ctx ends (the shutdown grace ran out) it should return soon, and the
// delivery is then left unsettled unless it returns nil.
type Handler interface {
	Handle(ctx context.Context, m Message) (outcome string, err error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, m Message) (string, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, m Message) (string, error) { return f(ctx, m) }

// Retry asks for a delayed retry no sooner than after (the loop picks the
// first retry queue whose delay is at least that, and at least the one due
// for this attempt).
func Retry(err error, after time.Duration) error { return &retryError{err: err, after: after} }

// Reject asks for the message to go to the dead-letter queue at once: it
// can never succeed (undecodable, unknown payment).
func Reject(err error) error { return &rejectError{err: err} }

type retryError struct {
	err   error
	after time.Duration
}

func (e *retryError) Error() string { return fmt.Sprintf("retry after %s: %v", e.after, e.err) }
func (e *retryError) Unwrap() error { return e.err }

type rejectError struct{ err error }

func (e *rejectError) Error() string { return fmt.Sprintf("reject: %v", e.err) }
func (e *rejectError) Unwrap() error { return e.err }

// retryAfter returns the minimum delay asked for by err (0 when unset).
func retryAfter(err error) time.Duration {
	if r, ok := errors.AsType[*retryError](err); ok {
		return r.after
	}
	return 0
}

func isReject(err error) bool {
	_, ok := errors.AsType[*rejectError](err)
	return ok
}
