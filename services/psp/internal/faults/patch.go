package faults

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
}

// Valid returns one problem per out-of-range field, keyed by its JSON name.
func (p Patch) Valid() map[string]string {
	// Apply onto zero knobs, which are themselves valid, so only p's fields can fail.
	return Knobs{}.apply(p).Valid()
}

func (k Knobs) apply(p Patch) Knobs {
	set(&k.LatencyMS, p.LatencyMS)
	set(&k.LatencyJitterMS, p.LatencyJitterMS)
	set(&k.FailBeforeRate, p.FailBeforeRate)
	set(&k.ErrorRate, p.ErrorRate)
	set(&k.FailAfterRate, p.FailAfterRate)
	set(&k.Idempotency, p.Idempotency)
	set(&k.Seed, p.Seed)
	return k
}

func set[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}
