// Package idemstage runs a consumer's stage at most once per idempotency
// key: the worker side of oncepay's boundary, for a RabbitMQ (or any)
// consumer whose messages may be delivered more than once.
//
// Stage.Do claims the stage (idem.Store.Begin), keeps the lease while the
// work runs (idem.Lease.Keep), hands the work the key to pass to its
// provider, and ends the stage: Complete with the work's result, or
// Release when the work failed, so the redelivery runs it again. The rules
// are the payments worker's:
//
//   - A redelivery of a completed stage does not run the work: Do returns
//     the stored result with Replayed set.
//   - While another consumer holds the stage, Do returns an
//     *idem.InProgressError: redeliver after its RetryAfter.
//   - The work's context ends before the lease can be taken over (at the
//     lease's deadline, when no heartbeat got through, cause idem.ErrLost)
//     and at Config.MaxHold (cause ErrHoldExceeded). Work past it must not
//     write; Do then returns an error matching idem.ErrLost (the stage is
//     not ours to end) or ErrHoldExceeded (the stage was released).
//   - A stage taken over from an expired lease (Attempt.TakeOver) may have
//     had its effect already: the work must find it (a unique constraint,
//     a row's status) and the provider must be told the same key
//     (Attempt.Key) so that its second call is a replay, not a second
//     effect.
//   - Complete and Release that Redis does not answer are retried for
//     Config.EndRetry. A Complete that still fails returns an error
//     matching idem.ErrUnavailable: redeliver, so that after the lease a
//     redelivery takes the stage over, finds the effect done and completes
//     the stage from it.
//
// How a caller settles a delivery from Do's error:
//
//	nil                          ack
//	errors.Is idem.ErrMismatch   the key was used for another message: dead-letter
//	*idem.InProgressError        redeliver after RetryAfter
//	anything else                redeliver (or dead-letter, by the work's own error)
//
// Config.OnEndRetry counts how retried ends of a stage went (a metric);
// Stage.WithLogger gives one message's Do a logger with its attributes.
// New runs the stage on an *idem.Store; NewOn on another Boundary with
// the same contract (the payments worker's teaching build plugs its
// comparison strategies in there).
//
// The package imports only the standard library and pkg/idem.
package idemstage
