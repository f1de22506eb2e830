// Package charge holds the simulated card processor's rules: what a valid
// charge request is, which requests are declined, how two requests are
// compared for idempotency, and the outcomes a call to the processor can have.
//
// It has no I/O; the ledger stores what it decides and the HTTP layer encodes it.
package charge
