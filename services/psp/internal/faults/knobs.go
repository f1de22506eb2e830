// Package faults decides, call by call, which faults the simulator injects:
// latency with jitter, a 503 before charging, a plain 500, a permanent
// rejection of the charge (400, for a while), and a dropped connection
// after charging. It also holds whether idempotency is on.
//
// Knobs can be changed at run time; the Injector is safe for concurrent use.
package faults

import (
	"fmt"
	"time"
)

// MaxLatencyMS bounds latency_ms and latency_jitter_ms (one minute).
const MaxLatencyMS = 60_000

// MaxRejectForMS bounds reject_for_ms (one day).
const MaxRejectForMS = 24 * 60 * 60 * 1000

// Knobs are the fault settings in force. The JSON form is the one
// GET /admin/config answers.
type Knobs struct {
	LatencyMS       int64   `json:"latency_ms"`        // base delay of every valid charge call
	LatencyJitterMS int64   `json:"latency_jitter_ms"` // the delay is LatencyMS ± uniform(0, LatencyJitterMS), never below 0
	FailBeforeRate  float64 `json:"fail_before_rate"`  // probability of a 503 without charging
	ErrorRate       float64 `json:"error_rate"`        // probability of a plain 500 without charging
	FailAfterRate   float64 `json:"fail_after_rate"`   // probability that a new charge is committed and then the connection dropped
	Idempotency     bool    `json:"idempotency"`       // false: every call charges anew, keys are ignored
	Seed            int64   `json:"seed"`              // seed the fault RNG was last (re)started with
	// RejectRate is the probability that a new charge is rejected for
	// good: 400 charge-rejected, stored under its key like a decline.
	RejectRate float64 `json:"reject_rate"`
	// RejectUntil is when RejectRate returns to 0 by itself; nil: it
	// stays until changed.
	RejectUntil *time.Time `json:"reject_until"`
}

// Defaults are the knobs when nothing is configured, apart from Seed.
func Defaults() Knobs {
	return Knobs{LatencyMS: 20, LatencyJitterMS: 10, Idempotency: true}
}

// Valid returns one problem per out-of-range knob, keyed by its JSON name.
func (k Knobs) Valid() map[string]string {
	problems := make(map[string]string)
	checkMS(problems, "latency_ms", k.LatencyMS)
	checkMS(problems, "latency_jitter_ms", k.LatencyJitterMS)
	checkRate(problems, "fail_before_rate", k.FailBeforeRate)
	checkRate(problems, "error_rate", k.ErrorRate)
	checkRate(problems, "fail_after_rate", k.FailAfterRate)
	checkRate(problems, "reject_rate", k.RejectRate)
	return problems
}

func checkMS(problems map[string]string, name string, v int64) {
	if v < 0 || v > MaxLatencyMS {
		problems[name] = fmt.Sprintf("must be between 0 and %d milliseconds", MaxLatencyMS)
	}
}

func checkRate(problems map[string]string, name string, v float64) {
	if !(v >= 0 && v <= 1) { // also rejects NaN
		problems[name] = "must be a probability between 0 and 1"
	}
}

// expire returns k with reject_rate back at 0 once its window has ended
// at now.
func (k Knobs) expire(now time.Time) Knobs {
	if k.RejectUntil != nil && !now.Before(*k.RejectUntil) {
		k.RejectRate, k.RejectUntil = 0, nil
	}
	return k
}
