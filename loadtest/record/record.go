// Package record reads what the k6 client saw: one JSON record per HTTP
// attempt, written by loadtest/k6 through console.log into the file named by
// k6's --console-output.
//
// A record line is the k6 console logger's line (JSON with --log-format=json,
// logfmt otherwise) whose message is a JSON object with "kind":"attempt".
// Other console lines are skipped and counted.
package record

import (
	"time"
)

// Class is how one attempt ended, as the client classified it.
type Class string

// The classes of an attempt. The transport classes say how far the request
// got: CutOff means the request had been sent and the connection broke before
// a complete answer (EOF, reset by peer, broken pipe); Refused means it never
// reached a server (connection refused).
const (
	ClassOK          Class = "ok"           // 2xx
	ClassConflict    Class = "conflict"     // 409, the key is in flight
	ClassMismatch    Class = "mismatch"     // 422, the key was used for another payload
	ClassUnavailable Class = "unavailable"  // 503
	ClassServerError Class = "server_error" // any other 5xx
	ClassClientError Class = "client_error" // any other 4xx
	ClassCutOff      Class = "cut_off"      // sent, then the connection broke
	ClassRefused     Class = "refused"      // connection refused
	ClassTimeout     Class = "timeout"      // no answer within the request timeout
	ClassTransport   Class = "transport"    // any other transport error
)

// Outcome is how a logical request (all its attempts) ended; it is set on the
// final attempt only.
type Outcome string

// The outcomes of a logical request.
const (
	OutcomeOK       Outcome = "ok"       // a 2xx
	OutcomeRejected Outcome = "rejected" // a 4xx that retrying cannot change (422 for a reused key)
	OutcomeGaveUp   Outcome = "gave_up"  // the retry budget ran out
)

// Attempt is one HTTP attempt of the k6 client.
type Attempt struct {
	Kind string  `json:"kind"` // "attempt"
	TS   float64 `json:"ts"`   // when the attempt started, ms since the Unix epoch
	// End is when the answer (or the error) was in, on the same clock: it
	// includes the connection set-up that k6's duration leaves out.
	End      float64 `json:"end,omitempty"`
	Scenario string  `json:"scenario"` // k6 scenario: steady, burst, mismatch, crossmerchant
	Merchant string  `json:"merchant"`
	Key      string  `json:"key"`    // the Idempotency-Key sent
	Amount   int64   `json:"amount"` // the amount sent
	// Fingerprint is the api's fingerprint of the payload sent
	// (idem.Fingerprint of POST /v1/payments and the body).
	Fingerprint string `json:"fp,omitempty"`
	// VU, Iter and Copy name the client that sent the attempt: the k6 VU,
	// the scenario iteration and the place in an http.batch. One VU's
	// attempts never overlap, except the copies of one batch.
	VU     int    `json:"vu,omitempty"`
	Iter   int    `json:"iter,omitempty"`
	Copy   int    `json:"copy,omitempty"`
	N      int    `json:"n"`      // attempt number within the logical request, from 1
	Target string `json:"target"` // host:port the attempt went to
	Status int    `json:"status"` // HTTP status, 0 on a transport error
	Class  Class  `json:"class"`
	// ErrorCode is k6's error_code (0 when there was none); Error its text.
	ErrorCode int    `json:"error_code,omitempty"`
	Error     string `json:"error,omitempty"`
	// For 2xx: the payment id in the body, the hex SHA-256 of the body
	// bytes, and whether the answer carried Idempotent-Replayed: true.
	PaymentID  string  `json:"id,omitempty"`
	BodySHA256 string  `json:"body_sha256,omitempty"`
	Replayed   bool    `json:"replayed,omitempty"`
	DurationMS float64 `json:"duration_ms"`
	// Final marks the last attempt of a logical request; Outcome says how
	// the request ended.
	Final   bool    `json:"final,omitempty"`
	Outcome Outcome `json:"outcome,omitempty"`
}

// Time returns when the attempt started.
func (a Attempt) Time() time.Time {
	return time.UnixMicro(int64(a.TS * 1000))
}

// EndTime returns when the attempt's answer was in; for a record without
// an end time, its start plus k6's duration.
func (a Attempt) EndTime() time.Time {
	if a.End == 0 {
		return time.UnixMicro(int64((a.TS + a.DurationMS) * 1000))
	}
	return time.UnixMicro(int64(a.End * 1000))
}

// Is2xx reports whether the attempt got a 2xx answer.
func (a Attempt) Is2xx() bool { return a.Status >= 200 && a.Status < 300 }
