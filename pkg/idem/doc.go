// Package idem is oncepay's idempotency boundary: a small state machine in
// Redis, shared by every stage that must run at most once per idempotency key.
//
// One Redis hash per logical operation, idem:v1:{<merchant>:<key>}, holds the
// fields of every stage ("api", "charge", ...), so HGETALL shows the whole life
// of a payment. Every transition is one Lua script from the lua package, run
// with EVALSHA (falling back to EVAL on NOSCRIPT); the scripts of concurrent
// calls share pipelines (Config.Unbatched). The queue of calls waiting for a
// pipeline is bounded (Config.MaxQueue; past it a call fails at once with
// ErrOverloaded) and holds only callers still waiting: a call whose context
// ends before it is sent is never sent, so a stalled Redis is not left a
// backlog of work nobody waits for.
//
//	Begin(stage)   COMPLETED               -> Claim with the stored result
//	               COMPLETED, other fp     -> ErrMismatch
//	               PENDING, live lease     -> ErrInProgress (with time left),
//	                                          whatever the fingerprint
//	               absent, or lease expired
//	               whatever the fingerprint -> PENDING, caller owns a Lease
//	Lease.Complete store the result, only while the caller still owns the stage
//	Lease.CompleteAs the same under another request's fingerprint: after
//	               Redis lost a key, repair it to the durable holder's answer
//	Lease.Release  give the stage back after a retryable failure
//	Lease.Extend   heartbeat for long work (Lease.Keep runs it for you)
//
// A stale owner, whose lease ran out and was taken over, gets ErrLost from
// Complete, Release and Extend and never overwrites the newer owner's result.
// A pending claim is not an answer: nothing is accepted for a key until its
// stage completes, so another payload is told ErrInProgress while the claim
// is live and takes it over once it ran out; the caller's durable backstop
// decides between a holder that is still working and the new request.
//
// Every script answers a resend by its owner as it answered the first run:
// go-redis sends a command or a pipeline again after a connection reset
// although Redis may have run it, and a resent Begin gets its own claim back
// (same attempt, takeover flag and lease end), a resent Complete or Release
// nil, a resent Extend a later lease end.
// Leases are expiry timestamps from Redis TIME, not key TTLs; the key TTL is
// at least the retention (default 24 h): Begin sets lease + retention, so a
// Complete within the lease leaves it as it is.
//
// A holder stops before its lease can end, not after: its deadline
// (Lease.Deadline) is the send time of its last successful Begin or Extend
// plus the lease minus a margin (Config.Margin) for clock drift and the
// time to stop; Lease.Keep cancels the work at that deadline even while
// Redis does not answer, so a takeover never overlaps the stale owner's
// work.
//
// A lease that is neither completed nor released stays PENDING until its
// lease runs out and someone claims the stage again; if nobody does, it
// stays PENDING for the whole retention. So when Complete or Release fails
// with ErrUnavailable (Redis restarting, a timeout), retry it: Retry does,
// with a bounded backoff, and stops at ErrLost.
//
// Redis is the fast path, not the source of truth: callers keep a durable
// backstop (a unique constraint, a compare-and-set) for the case where Redis
// loses its data. Every error that is not a decision of the state machine is
// reported as ErrUnavailable, so callers can fail closed. Redis out of memory
// (maxmemory reached, policy noeviction) is ErrFull, a kind of ErrUnavailable:
// nothing new is claimed or completed, completed stages are still replayed.
// A full queue is ErrOverloaded, also a kind of ErrUnavailable: nothing was
// sent.
//
// The package imports only the standard library, go-redis and the lua package;
// metrics reach the caller through Config.Observe.
package idem
