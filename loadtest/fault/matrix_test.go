package fault_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/fault"
)

func TestMatrixPlanHoldsEveryKindOnce(t *testing.T) {
	t.Parallel()
	for _, rt := range []string{"local", "compose", "kind"} {
		c := fault.MatrixConfig{Runtime: rt, APIs: apis, Workers: workers, Seed: 3}
		steps, load, err := fault.MatrixPlan(c)
		if err != nil {
			t.Fatalf("%s: %v", rt, err)
		}
		var got, want []string
		for _, k := range fault.Kinds {
			if k.On(rt) {
				want = append(want, k.Name)
			}
		}
		var last int64 = -1
		for _, s := range steps {
			got = append(got, s.Kind)
			if s.AtMS <= last {
				t.Errorf("%s: steps out of order: %v", rt, steps)
			}
			last = s.AtMS
			if k, _ := fault.KindByName(s.Kind); k.Action != s.Action || (k.Replica() && kind(s.Target) != k.Target) {
				t.Errorf("%s: step %+v does not match its kind %+v", rt, s, k)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: kinds (-want +got):\n%s", rt, diff)
		}
		if end := steps[len(steps)-1]; load < end.At()+time.Duration(end.ForMS)*time.Millisecond {
			t.Errorf("%s: load %s ends before the last fault %+v does", rt, load, end)
		}
		// make fault-matrix: the load, a 2-minute drain and start-up within 15 minutes
		if load > 10*time.Minute {
			t.Errorf("%s: load %s, want at most 10m", rt, load)
		}
		again, _, _ := fault.MatrixPlan(c)
		if diff := cmp.Diff(steps, again); diff != "" {
			t.Errorf("%s: same seed, different plans:\n%s", rt, diff)
		}
	}
}

func TestLongRunsHoldPostgresCrashAndWorkerPause(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d       time.Duration
		runtime string
		want    bool
	}{
		{3 * time.Minute, "", true},
		{3 * time.Minute, "local", true},
		{3 * time.Minute, "compose", false},
		{60 * time.Second, "local", false},
	}
	for _, tt := range tests {
		steps, err := fault.Plan(fault.PlanConfig{Duration: tt.d, APIs: apis, Workers: workers, Seed: 1, Runtime: tt.runtime})
		if err != nil {
			t.Fatal(err)
		}
		has := map[string]bool{}
		for _, s := range steps {
			has[s.Kind] = true
			if s.Kind == "" {
				t.Errorf("step %v has no kind", s)
			}
		}
		if has["kill-postgres"] != tt.want || has["pause-worker"] != tt.want {
			t.Errorf("%s on %q: kinds %v, want kill-postgres and pause-worker: %v", tt.d, tt.runtime, has, tt.want)
		}
	}
}
