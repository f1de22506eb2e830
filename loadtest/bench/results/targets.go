package results

import (
	"fmt"
	"strings"
)

// Target is one of the performance targets, evaluated on one run.
type Target struct {
	Name     string  `json:"name"`
	Goal     string  `json:"goal"`
	Measured string  `json:"measured"`
	Value    float64 `json:"value"`
	Met      bool    `json:"met"`
	Known    bool    `json:"known"` // false when the run lacked the data
}

// Targets evaluates every target that the run has data for, in the order
// of docs/PERFORMANCE.md.
func (r *Results) Targets() []Target {
	var out []Target
	add := func(t Target) { out = append(out, t) }

	// 1. boundary on vs off: each stage alone, then both at once
	apiAlone := Target{Name: "boundary on vs off: throughput, the api alone", Goal: ">= 0.90x"}
	workersAlone := Target{Name: "boundary on vs off: throughput, the workers alone", Goal: ">= 0.90x"}
	onOff := Target{Name: "boundary on vs off: throughput, both stages at once", Goal: ">= 0.90x"}
	p50 := Target{Name: "boundary on vs off: p50 overhead", Goal: "<= 0.5 ms"}
	onOffTargets := []*Target{&apiAlone, &workersAlone, &onOff}
	if e := r.E2E; e != nil && e.Baseline != "" {
		for _, t := range append(onOffTargets, &p50) {
			t.Measured = "not measured: an A/B run against a baseline api"
		}
	} else if e := r.E2E; e != nil && len(e.Saturation) > 0 && e.OffHonoured {
		apiAlone.ratio(e.Saturation, "payments/s accepted", func(s SatRound) (float64, float64, bool) {
			if s.OnAlone == nil || s.OffAlone == nil {
				return 0, 0, false
			}
			return s.OnAlone.API.Accepted, s.OffAlone.API.Accepted, true
		})
		workersAlone.ratio(e.Saturation, "payments/s charged", func(s SatRound) (float64, float64, bool) {
			if s.OnAlone == nil || s.OffAlone == nil {
				return 0, 0, false
			}
			return s.OnAlone.Drain.Charged, s.OffAlone.Drain.Charged, true
		})
		onOff.ratio(e.Saturation, "payments/s accepted", func(s SatRound) (float64, float64, bool) {
			return s.On.Accepted, s.Off.Accepted, true
		})
	} else if r.E2E != nil && !r.E2E.OffHonoured {
		for _, t := range append(onOffTargets, &p50) {
			t.Measured = "not measurable: the off variant still called Redis"
		}
	}
	if e := r.E2E; e != nil && len(e.Latency) > 0 && e.OffHonoured && e.Baseline == "" {
		var d, on, off []float64
		for _, l := range e.Latency {
			d = append(d, l.On.P50MS-l.Off.P50MS)
			on, off = append(on, l.On.P50MS), append(off, l.Off.P50MS)
		}
		p50.Value = Median(d)
		p50.Known = true
		p50.Met = p50.Value <= 0.5
		p50.Measured = fmt.Sprintf("%+.2f ms (p50 %.2f vs %.2f ms at %d/s)", p50.Value, Median(on), Median(off), r.Settings.LatencyRate)
	}
	add(apiAlone)
	add(workersAlone)
	add(onOff)
	add(p50)

	// 2. replay vs fresh
	rep := Target{Name: "replay vs fresh throughput", Goal: ">= 5x"}
	if e := r.E2E; e != nil && len(e.Saturation) > 0 {
		var ratios, fresh, replay []float64
		for _, s := range e.Saturation {
			fresh, replay = append(fresh, s.On.Accepted), append(replay, s.Replay.Replayed)
			if s.On.Accepted > 0 {
				ratios = append(ratios, s.Replay.Replayed/s.On.Accepted)
			}
		}
		rep.Value = Median(ratios)
		rep.Known = true
		rep.Met = rep.Value >= 5
		rep.Measured = fmt.Sprintf("%.1fx (%.0f vs %.0f requests/s)", rep.Value, Median(replay), Median(fresh))
	}
	add(rep)

	// 3. sustained vs colocated ceiling
	sus := Target{Name: "sustained end to end vs colocated ceiling", Goal: ">= 0.6x"}
	if r.E2E != nil && r.Coloc != nil && r.Coloc.Ceiling() > 0 {
		best := 0.0
		for _, s := range r.E2E.Sustained {
			if s.OK && s.Rate > best {
				best = s.Rate
			}
		}
		sus.Value = best / r.Coloc.Ceiling()
		sus.Known = len(r.E2E.Sustained) > 0
		sus.Met = sus.Known && sus.Value >= 0.6
		sus.Measured = fmt.Sprintf("%.2fx (%.0f of %.0f payments/s)", sus.Value, best, r.Coloc.Ceiling())
		if off := r.E2E.SustainedOff; len(off) > 0 {
			sus.Measured += "; boundary off: " + heldFailed(off)
		}
	}
	add(sus)

	// 4. round trips
	rt := Target{Name: "Redis round trips per new request / per replay", Goal: "2 / 1"}
	if e := r.E2E; e != nil && e.RoundTrips.Fresh.Requests > 0 && e.RoundTrips.Replay.Requests > 0 {
		fr, rp := e.RoundTrips.Fresh, e.RoundTrips.Replay
		f, p := fr.PerRequestWork(), rp.PerRequestWork()
		rt.Known = true
		rt.Value = f
		rt.Met = f == 2 && p == 1
		rt.Measured = fmt.Sprintf("%.3f / %.3f", f, p)
		if s := fr.Setup() + rp.Setup(); s > 0 {
			rt.Measured += fmt.Sprintf(" (plus %d connection handshakes over %d requests)", s, fr.Requests+rp.Requests)
		}
	}
	add(rt)

	// 5. pkg/idem vs raw EVALSHA
	gb := Target{Name: "pkg/idem Begin+Complete vs two raw EVALSHA", Goal: ">= 0.8x"}
	if g := r.Go; g != nil {
		bc, raw := g.Medians["BeginComplete"], g.Medians["RawEvalSha"]
		if bc.NsPerOp > 0 && raw.NsPerOp > 0 {
			gb.Value = raw.NsPerOp / bc.NsPerOp
			gb.Known = true
			gb.Met = gb.Value >= 0.8
			gb.Measured = fmt.Sprintf("%.2fx (%.1f vs %.1f us/op)", gb.Value, bc.NsPerOp/1e3, raw.NsPerOp/1e3)
		}
	}
	add(gb)
	return out
}

// ratio sets t to the median over rounds of on/off (a throughput ratio,
// met at 0.90x), with the median rates in unit; pick returns a round's
// rates, or false when the round lacks them.
func (t *Target) ratio(rounds []SatRound, unit string, pick func(SatRound) (on, off float64, ok bool)) {
	var ratios, ons, offs []float64
	for _, s := range rounds {
		on, off, ok := pick(s)
		if !ok || off <= 0 {
			continue
		}
		ons, offs = append(ons, on), append(offs, off)
		ratios = append(ratios, on/off)
	}
	if len(ratios) == 0 {
		t.Measured = "not measured in this run"
		return
	}
	t.Value = Median(ratios)
	t.Known = true
	t.Met = t.Value >= 0.90
	t.Measured = fmt.Sprintf("%.2fx (%.0f vs %.0f %s)", t.Value, Median(ons), Median(offs), unit)
}

// heldFailed lists the rates of ss as "500 held, 550 failed".
func heldFailed(ss []Sustained) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = fmt.Sprintf("%.0f failed", s.Rate)
		if s.OK {
			parts[i] = fmt.Sprintf("%.0f held", s.Rate)
		}
	}
	return strings.Join(parts, ", ")
}
