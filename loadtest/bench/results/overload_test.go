package results_test

import (
	"testing"

	"github.com/oncepay/oncepay/loadtest/bench/results"
)

func TestJudge(t *testing.T) {
	t.Parallel()
	capacity := results.OverloadPoint{Copy: "new", Accepted: 400, Sent: 400, Goodput: 400, APIRSS: 60, WorkerRSS: 50}
	good := results.OverloadPoint{Copy: "new", Factor: 2, Offered: 800, Sent: 800, Accepted: 380, Goodput: 380,
		Refused: 420, RefusedP99: 12, APIRSS: 80, WorkerRSS: 55}
	with := func(f func(*results.OverloadPoint)) results.OverloadPoint { p := good; f(&p); return p }
	for _, tc := range []struct {
		name                  string
		step                  results.OverloadPoint
		goodput, refusal, mem bool
	}{
		{"every goal met", good, true, true, true},
		{"goodput at the floor", with(func(p *results.OverloadPoint) { p.Goodput = 360 }), true, true, true},
		{"goodput below the floor", with(func(p *results.OverloadPoint) { p.Goodput = 359 }), false, true, true},
		{"slow refusals", with(func(p *results.OverloadPoint) { p.RefusedP99 = 50 }), true, false, true},
		{"a refusal without Retry-After", with(func(p *results.OverloadPoint) { p.RefusedBare = 1 }), true, false, true},
		{"timeouts instead of refusals", with(func(p *results.OverloadPoint) { p.TimedOut = 1 }), true, false, true},
		{"k6 ran out of VUs", with(func(p *results.OverloadPoint) { p.Sent = 791 }), true, false, true},
		{"served everything, refused nothing", with(func(p *results.OverloadPoint) { p.Refused, p.RefusedP99 = 0, 0 }), true, true, true},
		{"api memory grew", with(func(p *results.OverloadPoint) { p.APIRSS = 91 }), true, true, false},
		{"worker memory grew", with(func(p *results.OverloadPoint) { p.WorkerRSS = 76 }), true, true, false},
		{"memory not read", with(func(p *results.OverloadPoint) { p.APIRSS = 0 }), true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := results.Judge(capacity, tc.step)
			got := [3]bool{v.GoodputOK, v.RefusalOK, v.MemoryOK}
			if want := [3]bool{tc.goodput, tc.refusal, tc.mem}; got != want {
				t.Errorf("Judge: goodput, refusal, memory ok = %v, want %v (%+v)", got, want, v)
			}
			if v.OK() != (tc.goodput && tc.refusal && tc.mem) {
				t.Errorf("OK() = %v with %v", v.OK(), got)
			}
		})
	}
}

func TestJudgeWithoutCapacityFails(t *testing.T) {
	t.Parallel()
	v := results.Judge(results.OverloadPoint{}, results.OverloadPoint{Goodput: 100, APIRSS: 1, WorkerRSS: 1})
	if v.GoodputOK || v.MemoryOK {
		t.Errorf("Judge without a capacity run = %+v, want goodput and memory not ok", v)
	}
}

func TestCapacityOf(t *testing.T) {
	t.Parallel()
	o := &results.Overload{Capacity: []results.OverloadPoint{{Copy: "new", Goodput: 1}, {Copy: "base", Goodput: 2}}}
	for _, tc := range []struct {
		copy string
		want float64
		ok   bool
	}{{"new", 1, true}, {"base", 2, true}, {"other", 0, false}} {
		got, ok := o.CapacityOf(tc.copy)
		if got.Goodput != tc.want || ok != tc.ok {
			t.Errorf("CapacityOf(%q) = %v, %v; want goodput %v, %v", tc.copy, got.Goodput, ok, tc.want, tc.ok)
		}
	}
}
