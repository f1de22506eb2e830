// Package naive holds the idempotency strategies that oncepay is compared
// with: the common ways of "making an operation idempotent with Redis" that
// look right in a code review and break under faults. They exist for
// demonstration and measurement only (IDEM_STRATEGY, make compare,
// docs/failure-windows.md): only the services' teaching build (go build
// -tags compare) links this package, and a service that runs one of them
// says so loudly. Boundary is that build's idempotency boundary: oncepay's
// (Real) or a strategy (Of), with idem.Store's shape.
//
// Every strategy has the shape of idem.Store: Begin claims a stage of a
// merchant-scoped key and returns a Claim, either Completed with the stored
// result or Acquired with a Lease that the caller ends with Complete (store
// the result) or Release (give the key back after an error). They reuse
// idem.Key for scoping, idem.Config for their timings and idem's sentinel
// errors (ErrInProgress, ErrUnavailable), so the services map their answers
// exactly as they map the real boundary's. What they leave out is the point:
//
//   - GetThenSet reads the key, runs the work, then writes the result: two
//     requests that read before either writes both run.
//   - SetNXMarker claims the key with SET NX and overwrites the marker with
//     the result, deleting it on error: the marker has no owner and no lease,
//     so a crashed owner's marker blocks the key until the retention ends,
//     and anyone's delete removes whatever is there.
//   - LockThenCheck takes a short SET NX PX lock around check-and-mark and
//     lets the mark expire after a lease, but works outside the lock and
//     writes the completion unconditionally: an owner that outlives its mark
//     overwrites the next owner's result.
//   - Trusting acquires every time: the worker of the api-only strategy,
//     and both services with IDEM_STRATEGY=off.
//
// None of them stores a request fingerprint: a key reused for another
// payload is answered with the first payload's result. None has a
// heartbeat: Lease.Keep does nothing.
//
// The package imports only the standard library, go-redis, pkg/idem and,
// through it, the lua package.
package naive
