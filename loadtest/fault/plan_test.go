package fault_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/fault"
)

var (
	apis    = []string{"api-1", "api-2"}
	workers = []string{"worker-1", "worker-2"}
)

func TestPlanShortRun(t *testing.T) {
	t.Parallel()
	got, err := fault.Plan(fault.PlanConfig{Duration: 60 * time.Second, APIs: apis, Workers: workers, KillEvery: 6 * time.Second, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var gotShape []string
	for _, s := range got {
		gotShape = append(gotShape, string(s.Action)+" "+s.Target)
	}
	want := []string{
		"restart rabbitmq", "kill api-1", "kill api-2", "flush redis",
		"kill worker-1", "kill api-1", "restart redis", "kill worker-2",
	}
	if diff := cmp.Diff(want, gotShape); diff != "" {
		t.Errorf("plan (-want +got):\n%s\nfull plan: %v", diff, got)
	}
}

func TestPlanProperties(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{60 * time.Second, 90 * time.Second, 3 * time.Minute, 10 * time.Minute} {
		for seed := range uint64(20) {
			steps, err := fault.Plan(fault.PlanConfig{Duration: d, APIs: apis, Workers: workers, Seed: seed})
			if err != nil {
				t.Fatalf("Plan(%s, seed %d): %v", d, seed, err)
			}
			counts := map[string]int{}
			var last int64 = -1
			for _, s := range steps {
				if s.AtMS < last {
					t.Errorf("Plan(%s, seed %d): not ordered by time: %v", d, seed, steps)
				}
				last = s.AtMS
				if s.At() < min(10*time.Second, d/6) || s.At() > d-min(15*time.Second, d/6) {
					t.Errorf("Plan(%s, seed %d): step %v outside the fault window", d, seed, s)
				}
				counts[string(s.Action)+" "+kind(s.Target)]++
			}
			for _, k := range []string{"restart rabbitmq", "restart redis", "flush redis"} {
				if counts[k] != 1 {
					t.Errorf("Plan(%s, seed %d): %d × %s, want 1", d, seed, counts[k], k)
				}
			}
			if counts["kill api"] < 1 || counts["kill worker"] < 1 {
				t.Errorf("Plan(%s, seed %d): kills %v, want at least one api and one worker", d, seed, counts)
			}
			var broker time.Duration
			for _, s := range steps {
				if s.Target == "rabbitmq" {
					broker = s.At()
				}
				if kind(s.Target) == "worker" && s.At() >= broker && s.At() < broker+16*time.Second && broker > 0 {
					t.Errorf("Plan(%s, seed %d): %v kills a worker while the broker restarts (from %s)", d, seed, s, broker)
				}
			}
			if !workerKillAfterFlush(steps) {
				t.Errorf("Plan(%s, seed %d): no worker kill after the FLUSHALL: %v", d, seed, steps)
			}
		}
	}
}

func TestPlanDeterministic(t *testing.T) {
	t.Parallel()
	c := fault.PlanConfig{Duration: 3 * time.Minute, APIs: apis, Workers: workers, Seed: 7}
	a, _ := fault.Plan(c)
	b, _ := fault.Plan(c)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, different plans (-first +second):\n%s", diff)
	}
}

func TestPlanDefaultKillsEvery18s(t *testing.T) {
	t.Parallel()
	steps, err := fault.Plan(fault.PlanConfig{Duration: 3 * time.Minute, APIs: apis, Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	kills := 0
	for _, s := range steps {
		if s.Action == fault.ActionKill {
			kills++
		}
	}
	if kills < 6 || kills > 10 {
		t.Errorf("3 minute run: %d kills, want 6..10 (every 18s or so): %v", kills, steps)
	}
}

func TestPlanErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    fault.PlanConfig
	}{
		{"too short", fault.PlanConfig{Duration: 15 * time.Second, APIs: apis, Workers: workers}},
		{"no workers", fault.PlanConfig{Duration: time.Minute, APIs: apis}},
	}
	for _, tt := range tests {
		if _, err := fault.Plan(tt.c); err == nil {
			t.Errorf("%s: Plan succeeded, want an error", tt.name)
		}
	}
}

func kind(target string) string {
	switch target {
	case "api-1", "api-2":
		return "api"
	case "worker-1", "worker-2":
		return "worker"
	}
	return target
}

// workerKillAfterFlush: a worker killed after the FLUSHALL leaves a lease
// that only a takeover frees.
func workerKillAfterFlush(steps []fault.Step) bool {
	flushed := false
	for _, s := range steps {
		if s.Action == fault.ActionFlush {
			flushed = true
		}
		if flushed && s.Action == fault.ActionKill && kind(s.Target) == "worker" {
			return true
		}
	}
	return false
}

func TestHAPlanFailsTheClustersOver(t *testing.T) {
	t.Parallel()
	steps, err := fault.Plan(fault.PlanConfig{Duration: 3 * time.Minute, APIs: apis, Workers: workers, Seed: 1, Runtime: "local", Topology: "ha"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]fault.Step{}
	for _, s := range steps {
		got[s.Kind] = s
		if k, _ := fault.KindByName(s.Kind); !k.In("ha") {
			t.Errorf("ha plan holds %s, a kind of the single topology", s.Kind)
		}
	}
	for _, k := range []string{"failover-redis", "kill-rabbitmq-leader", "migrate-slot"} {
		if _, ok := got[k]; !ok {
			t.Errorf("ha plan lacks %s: %v", k, steps)
		}
	}
	if s := got["kill-rabbitmq-leader"]; s.ForMS <= 0 {
		t.Errorf("kill-rabbitmq-leader step %+v: want its kind's For as ForMS", s)
	}
}

// TestHAPlanOnContainerRuntimes: compose and kind fail the clusters over
// too, and hold only kinds their backends can apply.
func TestHAPlanOnContainerRuntimes(t *testing.T) {
	t.Parallel()
	for _, runtime := range []string{"compose", "kind"} {
		steps, err := fault.Plan(fault.PlanConfig{Duration: 3 * time.Minute, APIs: apis, Workers: workers, Seed: 1, Runtime: runtime, Topology: "ha"})
		if err != nil {
			t.Fatalf("%s: %v", runtime, err)
		}
		got := map[string]bool{}
		for _, s := range steps {
			got[s.Kind] = true
			if k, _ := fault.KindByName(s.Kind); !k.On(runtime) || !k.In("ha") {
				t.Errorf("%s: ha plan holds %s, which it cannot apply", runtime, s.Kind)
			}
		}
		for _, k := range []string{"failover-redis", "kill-rabbitmq-leader", "migrate-slot"} {
			if !got[k] {
				t.Errorf("%s: ha plan lacks %s: %v", runtime, k, steps)
			}
		}
	}
}
