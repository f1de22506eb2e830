package faults

import (
	"fmt"
	"time"
)

// Patch is a partial update of the knobs, the body of PUT /admin/config:
// nil fields are left as they are. Setting Seed restarts the fault RNG.
type Patch struct {
	LatencyMS       *int64   `json:"latency_ms,omitempty"`
	LatencyJitterMS *int64   `json:"latency_jitter_ms,omitempty"`
	FailBeforeRate  *float64 `json:"fail_before_rate,omitempty"`
	ErrorRate       *float64 `json:"error_rate,omitempty"`
	FailAfterRate   *float64 `json:"fail_after_rate,omitempty"`
	Idempotency     *bool    `json:"idempotency,omitempty"`
	Seed            *int64   `json:"seed,omitempty"`
	// RejectRate sets reject_rate. RejectForMS, only with it, is how long
	// that rate holds (then it returns to 0); absent or 0: until changed.
	// Setting RejectRate without RejectForMS clears an earlier window.
	RejectRate  *float64 `json:"reject_rate,omitempty"`
	RejectForMS *int64   `json:"reject_for_ms,omitempty"`
}

// Valid returns one problem per out-of-range field, keyed by its JSON name.
func (p Patch) Valid() map[string]string {
	// Apply onto zero knobs, which are themselves valid, so only p's fields can fail.
	problems := Knobs{}.apply(p, time.Time{}).Valid()
	switch {
	case p.RejectForMS == nil:
	case p.RejectRate == nil:
		problems["reject_for_ms"] = "needs reject_rate in the same update"
	case *p.RejectForMS < 0 || *p.RejectForMS > MaxRejectForMS:
		problems["reject_for_ms"] = fmt.Sprintf("must be between 0 and %d milliseconds", MaxRejectForMS)
	}
	return problems
}

// apply returns k changed by p, applied at now (reject_for_ms counts from
// it).
func (k Knobs) apply(p Patch, now time.Time) Knobs {
	set(&k.LatencyMS, p.LatencyMS)
	set(&k.LatencyJitterMS, p.LatencyJitterMS)
	set(&k.FailBeforeRate, p.FailBeforeRate)
	set(&k.ErrorRate, p.ErrorRate)
	set(&k.FailAfterRate, p.FailAfterRate)
	set(&k.Idempotency, p.Idempotency)
	set(&k.Seed, p.Seed)
	if p.RejectRate != nil {
		k.RejectRate, k.RejectUntil = *p.RejectRate, nil
		if p.RejectForMS != nil && *p.RejectForMS > 0 {
			until := now.Add(time.Duration(*p.RejectForMS) * time.Millisecond)
			k.RejectUntil = &until
		}
	}
	return k
}

func set[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}
