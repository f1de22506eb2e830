package verify

import (
	"slices"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/record"
)

// FaultRow is one fault of the run, as the fault matrix reports it.
type FaultRow struct {
	Seq    int           `json:"seq"`
	Kind   string        `json:"kind"`
	Target string        `json:"target"`
	At     time.Duration `json:"at_ns"` // from the start of the load
	// Landed: applied without error and, if it had an aim, while the
	// aimed-at work was in flight (and, for a kill of an api replica seen
	// frozen, the client saw a request cut off).
	Landed   bool   `json:"landed"`
	Hit      string `json:"hit"` // the replica whose work it hit (the target, for a replica fault)
	InFlight int    `json:"in_flight"`
	Frozen   bool   `json:"frozen"`
	// CutOff and Takeovers are the client's cut-off attempts and the
	// workers' lease takeovers in the fault's window: from the fault to
	// the next one (to the end, for the last), cut-offs ending up to
	// cutOffBefore early.
	CutOff    int `json:"cut_off"`
	Takeovers int `json:"takeovers"`
	// Unavailable counts the attempts answered 503 (fail closed) in the
	// same window: what a failover cost the clients.
	Unavailable int `json:"unavailable"`
	// Exercises are the invariants its kind puts to the test (fault.Kind);
	// Violated the invariants broken by payments created in its window.
	Exercises []int `json:"exercises"`
	Violated  []int `json:"violated"`
	// Recovery is how goodput came back after it (invariant 8).
	Recovery *Recovery `json:"recovery,omitempty"`
}

// matrix builds one row per fault, in time order, with its recovery. Violations are counted
// against the fault whose window holds the creation of a payment they name.
func (c *checker) matrix(faults []Fault, recoveries []Recovery) []FaultRow {
	if len(faults) == 0 {
		return nil
	}
	windowOf := func(t time.Time) int {
		i := -1
		for j, f := range faults {
			if !t.Before(f.Time) {
				i = j
			}
		}
		return i
	}
	violated := make([]map[int]bool, len(faults))
	for _, v := range c.violations {
		for _, id := range v.IDs {
			p, ok := c.byID[id]
			if !ok {
				continue
			}
			if i := windowOf(p.CreatedAt); i >= 0 {
				if violated[i] == nil {
					violated[i] = map[int]bool{}
				}
				violated[i][v.Invariant] = true
			}
			break
		}
	}
	rows := make([]FaultRow, len(faults))
	for i, f := range faults {
		kind := f.Kind
		if kind == "" {
			kind = fault.KindOf(f.Action, f.Target)
		}
		row := FaultRow{
			Seq: f.Seq, Kind: kind, Target: f.Target, At: f.At,
			Landed: f.Landed(), Hit: f.Hit, InFlight: f.InFlight, Frozen: f.Frozen,
		}
		if row.Hit == "" && f.MidRequest != nil && *f.MidRequest {
			row.Hit = f.Target
		}
		if f.Action == fault.ActionKill && strings.HasPrefix(f.Target, "api-") && frozenMid(f.Event) && c.cutOffsNear(f.Time) == 0 {
			row.Landed = false // the client did not confirm it (invariant 6)
		}
		if k, ok := fault.KindByName(kind); ok {
			row.Exercises = k.Invariants
			if k.Takeover && c.takeoversAfter(f.Event, k) == 0 {
				row.Landed = false // the lease it froze was never taken over
			}
		}
		// a cut-off's end is estimated from k6's timings, which leave out
		// the connect time: it may fall just before the kill
		from, to := f.Time.Add(-cutOffBefore), time.Time{}
		if i+1 < len(faults) {
			to = faults[i+1].Time
		}
		in := func(t time.Time) bool { return !t.Before(from) && (to.IsZero() || t.Before(to.Add(-cutOffBefore))) }
		for _, a := range c.s.Attempts {
			end := a.Time().Add(time.Duration(a.DurationMS * float64(time.Millisecond)))
			switch {
			case a.Class == record.ClassCutOff && in(end):
				row.CutOff++
			case a.Class == record.ClassUnavailable && in(end):
				row.Unavailable++
			}
		}
		for _, t := range c.s.Takeovers {
			if in(t.TakenAt) {
				row.Takeovers++
			}
		}
		for inv := range violated[i] {
			row.Violated = append(row.Violated, inv)
		}
		slices.Sort(row.Violated)
		if i < len(recoveries) {
			row.Recovery = &recoveries[i]
		}
		rows[i] = row
	}
	return rows
}
