package verify

import (
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/record"
)

// cutOffWindow is how far a client's cut-off may end from the kill that
// caused it: the client's read fails when the kernel closes the killed
// process's socket, a few milliseconds after the kill (the event's time is
// taken just before it).
const (
	cutOffBefore = 500 * time.Millisecond
	cutOffAfter  = 3 * time.Second
)

// landed checks invariant 6: the faults landed where they were aimed, and
// the driver and the client agree on it.
//
//   - A kill of an api replica that the driver saw mid-request in the
//     frozen process must show as a client request cut off within
//     [kill-cutOffBefore, kill+cutOffAfter]; if none did, the two
//     detectors disagree and the kill is not counted as landed.
//   - With RequireLanded, every fault that did not land is a violation.
//   - A run with faults in which nothing landed proved nothing, unless it
//     caught a violation of another invariant: then it proved that. What
//     counts as landed is what the plan can show. Client requests cut
//     off, lease takeovers and faults seen frozen mid-work come from the
//     faults on replicas (kills and pauses, which freeze the replica
//     first). A plan without those, whose faults are aimed at work in
//     flight (a Postgres failover, whose in-flight requests are answered
//     503), landed when one of them was applied while its aim was in
//     flight. Takeovers are not required, so a strategy without leases can
//     pass.
func (c *checker) landed(r Requests) {
	if !c.s.ExpectFaults {
		return
	}
	caught := len(c.violations) > 0
	confirmed := 0
	for _, e := range c.s.Faults {
		if !frozenMid(e) {
			continue
		}
		if e.Action == fault.ActionKill && strings.HasPrefix(e.Target, "api-") {
			if n := c.cutOffsNear(e.Time); n == 0 {
				c.add(6, KindDetectorsDisagree, []string{e.Target},
					"fault %d (kill %s at %s): the driver saw %d request(s) in flight in the frozen process, the client saw none cut off within %s after it",
					e.Seq, e.Target, c.at(e.Time), e.InFlight, cutOffAfter)
				continue
			}
		}
		confirmed++
	}
	if c.s.RequireLanded {
		for _, e := range c.s.Faults {
			k, _ := fault.KindByName(e.Kind)
			if e.Landed() && k.Takeover && c.takeoversAfter(e, k) == 0 {
				c.add(6, KindFaultMissed, []string{e.Kind, e.Target}, "fault %d (%s %s at %s) did not land: no worker took a lease over within %s after it",
					e.Seq, e.Kind, e.Target, c.at(e.Time), k.For+k.Settle)
				continue
			}
			if !e.Landed() {
				why := "it failed: " + e.Error
				if e.Error == "" {
					why = "nothing it aimed at was in flight: " + e.Evidence
				}
				c.add(6, KindFaultMissed, []string{e.Kind, e.Target}, "fault %d (%s %s at %s) did not land: %s",
					e.Seq, e.Kind, e.Target, c.at(e.Time), why)
			}
		}
	}
	if !replicaFaults(c.s.Faults) {
		for _, e := range c.s.Faults {
			if e.MidRequest != nil && e.Landed() {
				confirmed++
			}
		}
	}
	if r.CutOff == 0 && len(c.s.Takeovers) == 0 && confirmed == 0 && !caught {
		kills, mid := 0, 0
		for _, e := range c.s.Faults {
			if e.Action == fault.ActionKill {
				kills++
				if e.MidRequest != nil && *e.MidRequest {
					mid++
				}
			}
		}
		c.add(6, KindNothingLanded, nil,
			"no client request was cut off in flight, no worker lease was taken over and no fault was seen frozen mid-work (%d kills, %d seen mid-request): the run proved nothing",
			kills, mid)
	}
}

// replicaFaults reports whether faults hold a kill or a pause of a
// replica: the faults that cut requests off, leave leases to take over
// and are seen frozen mid-work.
func replicaFaults(faults []fault.Event) bool {
	for _, e := range faults {
		if (e.Action == fault.ActionKill || e.Action == fault.ActionPause) && isReplica(e.Target) {
			return true
		}
	}
	return false
}

// frozenMid: the driver counted work in flight in the stopped replica and
// the fault did not fail.
func frozenMid(e fault.Event) bool {
	return e.Frozen && e.MidRequest != nil && *e.MidRequest && e.Error == ""
}

// cutOffsNear counts the client's attempts cut off whose end lies within
// the window around t.
func (c *checker) cutOffsNear(t time.Time) int {
	n := 0
	for _, a := range c.s.Attempts {
		if a.Class != record.ClassCutOff {
			continue
		}
		end := a.Time().Add(time.Duration(a.DurationMS * float64(time.Millisecond)))
		if !end.Before(t.Add(-cutOffBefore)) && !end.After(t.Add(cutOffAfter)) {
			n++
		}
	}
	return n
}

// takeoversAfter counts the lease takeovers within k.For+k.Settle after e.
func (c *checker) takeoversAfter(e fault.Event, k fault.Kind) int {
	n := 0
	for _, t := range c.s.Takeovers {
		if !t.TakenAt.Before(e.Time) && !t.TakenAt.After(e.Time.Add(k.For+k.Settle)) {
			n++
		}
	}
	return n
}
