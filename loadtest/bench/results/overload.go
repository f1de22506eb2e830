package results

// The overload phase's goals (docs/perf-overload.md): under an open-model
// load above capacity, goodput stays near capacity, the excess is refused
// fast, and memory stays bounded.
const (
	OverloadGoodputFloor = 0.9 // goodput at least this × the copy's capacity
	OverloadRefusalP99MS = 50  // p99 of the refusals (503/429) below this
	OverloadRSSGrowth    = 1.5 // api's and worker's RSS at the end within this × at capacity
)

// Overload is the overload phase: two copies of the pipeline, the code of
// this run ("new") and a BASE ref built beside it ("base"), each first
// measured at capacity (a closed-model run) and then offered an open-model
// load of Factors × capacity.
type Overload struct {
	BaseRef    string `json:"base_ref"`    // BENCH_BASE as given
	BaseCommit string `json:"base_commit"` // what it resolved to
	Seconds    int    `json:"seconds"`     // length of each overload step
	// LoadCPUs is the CPU list k6 and the psp ran on, apart from the
	// system under test (BENCH_LOAD_CPUS); empty: all shared every CPU.
	LoadCPUs string          `json:"load_cpus,omitempty"`
	Factors  []float64       `json:"factors"`  // offered load / capacity
	Capacity []OverloadPoint `json:"capacity"` // one per copy, the closed-model run
	Steps    []OverloadPoint `json:"steps"`    // one per copy and factor
}

// OverloadPoint is one run of one copy. Rates are per second of the run;
// the memory is the resident set, in MiB, summed over the copy's api
// replicas and over its workers, read as the run ended.
type OverloadPoint struct {
	Copy    string  `json:"copy"`    // "new" or "base"
	Factor  float64 `json:"factor"`  // 0 for the capacity run
	Offered float64 `json:"offered"` // requests/s k6 was asked for (0: closed model)
	// Sent is requests/s k6 sent and saw answered or timed out: Offered
	// less the iterations it dropped for want of a free VU (requests stuck
	// in the api hold VUs) and those still in flight when the run ended.
	Sent     float64 `json:"sent"`
	Accepted float64 `json:"accepted"` // 202s/s
	// Goodput is payments/s of the run's requests that the api accepted
	// and a worker had charged when the backlog drained (or DrainedIn ran
	// out), whether or not the client saw the 202 in time (a client that
	// did not retries and gets the replay).
	Goodput    float64 `json:"goodput"`
	Refused    float64 `json:"refused"`     // 503s and 429s/s
	RefusedP99 float64 `json:"refused_p99"` // ms
	// RefusedBare is how many refusals came without Retry-After.
	RefusedBare int     `json:"refused_bare"`
	TimedOut    float64 `json:"timed_out"` // requests/s that got no answer within k6's 10 s timeout
	OtherFailed float64 `json:"other_failed"`
	AcceptedP99 float64 `json:"accepted_p99"` // ms, of every answer
	APIRSS      float64 `json:"api_rss_mib"`
	WorkerRSS   float64 `json:"worker_rss_mib"`
	DrainedIn   float64 `json:"drained_in"` // seconds until none of its payments was pending
}

// CapacityOf returns the capacity run of copy c, or false.
func (o *Overload) CapacityOf(c string) (OverloadPoint, bool) {
	for _, p := range o.Capacity {
		if p.Copy == c {
			return p, true
		}
	}
	return OverloadPoint{}, false
}

// Verdict is the overload phase's three goals for one step, each against
// the copy's own capacity run.
type Verdict struct {
	GoodputRatio float64 // Goodput / capacity's goodput
	GoodputOK    bool
	// RefusalOK: the excess was refused fast: nothing timed out, k6 sent
	// at least 99 % of the offered load (requests stuck in the api hold
	// k6's VUs and make it drop iterations), and every refusal came with
	// Retry-After, at a p99 below the goal.
	RefusalOK    bool
	APIGrowth    float64
	WorkerGrowth float64
	MemoryOK     bool
}

// OK is whether the step met every goal.
func (v Verdict) OK() bool { return v.GoodputOK && v.RefusalOK && v.MemoryOK }

// Judge returns step s's verdict against capacity run c. Capacity is the
// capacity run's goodput: what the copy charges when it is not overloaded.
// Excess load that was neither refused nor served (timeouts) fails the
// refusal goal: it was not refused fast.
func Judge(c, s OverloadPoint) Verdict {
	var v Verdict
	if c.Goodput > 0 {
		v.GoodputRatio = s.Goodput / c.Goodput
	}
	v.GoodputOK = v.GoodputRatio >= OverloadGoodputFloor
	v.RefusalOK = s.TimedOut == 0 && s.Sent >= 0.99*s.Offered && s.RefusedBare == 0 &&
		(s.Refused == 0 || s.RefusedP99 < OverloadRefusalP99MS)
	if c.APIRSS > 0 {
		v.APIGrowth = s.APIRSS / c.APIRSS
	}
	if c.WorkerRSS > 0 {
		v.WorkerGrowth = s.WorkerRSS / c.WorkerRSS
	}
	v.MemoryOK = v.APIGrowth > 0 && v.APIGrowth <= OverloadRSSGrowth && v.WorkerGrowth > 0 && v.WorkerGrowth <= OverloadRSSGrowth
	return v
}
