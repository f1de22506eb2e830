package faults

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrInvalid is wrapped by the errors of New and Update for out-of-range knobs.
var ErrInvalid = errors.New("invalid fault knobs")

// Plan is what happens to one charge call, decided when it arrives.
type Plan struct {
	Delay       time.Duration // sleep this long before doing anything
	FailBefore  bool          // answer 503, charge nothing
	Error       bool          // answer 500, charge nothing (checked after FailBefore)
	FailAfter   bool          // if the call creates a new charge: commit it, then drop the connection
	Reject      bool          // if the call is new: reject it for good (400, stored under its key; checked after Error)
	Idempotency bool          // the idempotency knob at arrival
}

// Injector draws a Plan per call from the knobs in force and a seeded RNG.
// It is safe for concurrent use.
type Injector struct {
	mu    sync.Mutex
	knobs Knobs
	rng   *rand.Rand
	now   func() time.Time // the clock of reject_for_ms
}

// New returns an Injector with knobs k, its RNG seeded with k.Seed.
// It fails, wrapping ErrInvalid, if k is not valid.
func New(k Knobs) (*Injector, error) {
	if err := invalid(k.Valid()); err != nil {
		return nil, err
	}
	return &Injector{knobs: k, rng: newRNG(k.Seed), now: time.Now}, nil
}

// Knobs returns the knobs in force (reject_rate is 0 once its window has
// ended).
func (i *Injector) Knobs() Knobs {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.knobsNow()
}

// knobsNow expires the reject window if it has ended and returns the
// knobs; i.mu must be held.
func (i *Injector) knobsNow() Knobs {
	i.knobs = i.knobs.expire(i.now())
	return i.knobs
}

// Update applies p and returns the knobs now in force. If p sets Seed, the RNG
// restarts from it, so the draws that follow repeat exactly. It fails,
// wrapping ErrInvalid and changing nothing, if p is not valid.
func (i *Injector) Update(p Patch) (Knobs, error) {
	if err := invalid(p.Valid()); err != nil {
		return Knobs{}, err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.knobs = i.knobs.apply(p, i.now())
	if p.Seed != nil {
		i.rng = newRNG(*p.Seed)
	}
	return i.knobsNow(), nil
}

// Draw decides the fate of the next call. Every call consumes exactly five
// numbers from the RNG whatever the knobs, so for one seed the n-th call
// always gets the n-th plan. The four fault draws are independent.
func (i *Injector) Draw() Plan {
	i.mu.Lock()
	defer i.mu.Unlock()
	k := i.knobsNow()
	jitter, before, fail, after, reject := i.rng.Float64(), i.rng.Float64(), i.rng.Float64(), i.rng.Float64(), i.rng.Float64()
	delay := float64(k.LatencyMS) + (2*jitter-1)*float64(k.LatencyJitterMS)
	return Plan{
		Delay:       time.Duration(max(delay, 0) * float64(time.Millisecond)),
		FailBefore:  before < k.FailBeforeRate,
		Error:       fail < k.ErrorRate,
		FailAfter:   after < k.FailAfterRate,
		Reject:      reject < k.RejectRate,
		Idempotency: k.Idempotency,
	}
}

func newRNG(seed int64) *rand.Rand {
	// The fault knobs need a reproducible stream from PSP_SEED, not secrecy;
	// the conversion keeps the seed's bits (a negative seed is a valid seed).
	return rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15)) // #nosec G404 G115 -- reproducible fault injection, bits kept on purpose
}

func invalid(problems map[string]string) error {
	if len(problems) == 0 {
		return nil
	}
	var b strings.Builder
	for i, name := range slices.Sorted(maps.Keys(problems)) {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %s", name, problems[name])
	}
	return fmt.Errorf("%w: %s", ErrInvalid, b.String())
}
