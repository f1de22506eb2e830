// Package idemhttp is the idempotency boundary as net/http middleware: a
// request with an Idempotency-Key header (draft-ietf-httpapi-idempotency-
// key-header) on a covered method runs its handler at most once per key,
// and every retry with the same key and payload gets the first answer
// again, byte for byte, with Idempotent-Replayed: true.
//
// For one request the middleware, in this order:
//
//  1. parses the key (1-255 visible ASCII characters, or the same quoted as
//     an RFC 8941 sf-string) and scopes it (Config.Scope: the tenant);
//  2. fingerprints the request (Config.Fingerprint: by default method,
//     route pattern and canonical body); a failure is answered without
//     touching the store, so an invalid request consumes no key;
//  3. claims the key's stage (idem.Store.Begin) on a context detached
//     from the client, so that a client hanging up cannot abandon a claim
//     Redis still makes;
//  4. on a claim, runs the handler into a recorder, on that detached
//     context bounded by the lease's deadline (counted from Begin's send
//     time, minus the store's margin: the work stops before another
//     request may take the key over);
//  5. ends the stage BEFORE it answers: Complete stores a 2xx or 4xx
//     answer, Release gives the key back after a 5xx (the client may
//     retry); when Redis does not answer, it retries for Config.EndRetry
//     while the client waits, so that an answer the client has seen is
//     recorded;
//  6. answers: the recorded answer, a replay, or an RFC 9457 problem
//     (400 missing or malformed key, 409 + Retry-After in progress, 422 key
//     reused with another payload, 503 + Retry-After store unavailable).
//
// A durable backstop (Config.Backstop, CompleteAs) lets the system of
// record answer for a key after Redis lost it: see docs/adopt.md.
package idemhttp
