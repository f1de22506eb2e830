// Package charge handles one payment.initiated message: it claims the
// "charge" stage of the payment's idempotency key in the Redis boundary,
// charges the payment through the psp with the propagated key, moves the
// payment row from pending to its terminal status with a compare-and-set,
// and completes the stage. docs/worker.md draws the state machine.
//
// Redis is the fast path. When it has lost its data, the database (the
// compare-and-set, and a payment already terminal) and the psp's own
// idempotency by key keep a payment from being charged twice.
package charge
