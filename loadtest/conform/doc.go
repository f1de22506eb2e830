// Package conform checks any HTTP endpoint that takes an Idempotency-Key
// against the rules of draft-ietf-httpapi-idempotency-key-header-07, black
// box: it sends requests, records every answer and grades them.
//
// Check runs three parts and returns a Report:
//
//  1. The matrix: one Row per rule (section, level, pass / fail / n/a, and
//     the requests and answers that decided it), each on fresh keys.
//  2. A storm: Storm.Clients clients on each of Storm.Keys keys at once,
//     retrying 409, 429, 503, other 5xx and lost answers with the backoff of
//     the k6 client (honouring Retry-After), optionally running a fault
//     command at chosen moments.
//  3. The storm's history, every attempt with its payload fingerprint, start,
//     end and answer (or none), checked with porcupine against a model of an
//     idempotent create (model.go).
//
// A rule whose input the Target does not give (a second credential, a way
// to make the target fail, an effect reader, an expiry policy) is reported
// n/a, never guessed. Report.OK is true when every applicable MUST and SHOULD
// row passes; profile rows (what oncepay chooses where the draft is silent)
// are reported but do not decide it.
//
// Run wraps Check for a go test: it fails the test once per failing row.
package conform
