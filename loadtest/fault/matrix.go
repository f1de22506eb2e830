package fault

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// MatrixConfig shapes a matrix plan.
type MatrixConfig struct {
	Runtime       string   // local, compose, kind: only the kinds it can apply
	Topology      string   // single ("" too) or ha: only the kinds of that topology
	APIs, Workers []string // the replicas a replica fault picks from
	Seed          uint64   // picks the replicas and jitters the times; the same seed gives the same plan
	// Kinds, if set, keeps only the kinds named (a matrix of one kind, to
	// run it under another load); unknown names are an error.
	Kinds []string
}

// The matrix plan's lead (steady load before the first fault), tail (load
// after the last fault's Settle) and the Settle of a kind that names none.
const (
	matrixLead   = 10 * time.Second
	matrixTail   = 5 * time.Second
	matrixSettle = 18 * time.Second
)

// MatrixPlan returns one step of every kind in Kinds that runtime can
// apply, in Kinds order, each For plus Settle after the one before, and
// how long the load must run to hold them all. Replica kinds pick a
// replica of their class by seed (network kinds: that replica's proxy to
// their Path); every step but the first is moved by up
// to ±500ms.
func MatrixPlan(c MatrixConfig) ([]Step, time.Duration, error) {
	if len(c.APIs) == 0 || len(c.Workers) == 0 {
		return nil, 0, fmt.Errorf("matrix plan: need at least one api and one worker replica")
	}
	for _, name := range c.Kinds {
		if _, ok := KindByName(name); !ok {
			return nil, 0, fmt.Errorf("matrix plan: no fault kind %q", name)
		}
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x6d617472))
	var steps []Step
	at := matrixLead
	for _, k := range Kinds {
		if !k.Applies(c.Runtime, c.Topology) || (len(c.Kinds) > 0 && !slices.Contains(c.Kinds, k.Name)) {
			continue
		}
		target := k.Target
		switch k.Target {
		case "api":
			target = c.APIs[rng.IntN(len(c.APIs))]
		case "worker":
			target = c.Workers[rng.IntN(len(c.Workers))]
		}
		if k.Path != "" {
			target += "." + k.Path // the replica's proxy: worker-1.redis
		}
		jitter := time.Duration(rng.Int64N(1001)-500) * time.Millisecond
		if len(steps) == 0 {
			jitter = 0
		}
		t := at + jitter
		steps = append(steps, Step{AtMS: t.Milliseconds(), Kind: k.Name, Action: k.Action, Target: target,
			ForMS: k.For.Milliseconds(), DelayMS: k.Delay.Milliseconds()})
		settle := k.Settle
		if settle == 0 {
			settle = matrixSettle
		}
		at += k.For + settle
	}
	if len(steps) == 0 {
		return nil, 0, fmt.Errorf("matrix plan: runtime %q (topology %q) can apply no fault kind", c.Runtime, c.Topology)
	}
	return steps, at + matrixTail, nil
}
