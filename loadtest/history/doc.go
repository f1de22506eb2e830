// Package history checks what the load test's clients observed against a
// sequential model of POST /v1/payments, per (merchant, Idempotency-Key),
// with porcupine (invariant 7, ARCHITECTURE §5).
//
// A partition is the history of one key: every HTTP attempt any client made
// with it, each an operation from the client's start to its end time, and,
// last, one final read of the system of record after the drain (the payment
// row and the psp's effective charges for it). The history passes when some
// order of its operations, consistent with real time, is a run of the model
// (model.go). An attempt whose outcome the client cannot know (cut off,
// timed out, a 5xx) may or may not take effect, at any time until the final
// read: the model is nondeterministic there and the attempt's interval is
// stretched to the final read, so it is never dropped.
//
// Check verdicts are Ok, Illegal (a violation) or Unknown (the checker ran
// out of time); Unknown is a failure, never a pass.
package history
