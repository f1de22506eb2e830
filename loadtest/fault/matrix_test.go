package fault_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/fault"
)

func TestMatrixPlanHoldsEveryKindOnce(t *testing.T) {
	t.Parallel()
	for _, c := range []fault.MatrixConfig{
		{Runtime: "local"}, {Runtime: "compose"}, {Runtime: "kind"}, {Runtime: "local", Topology: "ha"},
		{Runtime: "kind", Topology: "ha"},
	} {
		c.APIs, c.Workers, c.Seed = apis, workers, 3
		rt := c.Runtime + "/" + c.Topology
		steps, load, err := fault.MatrixPlan(c)
		if err != nil {
			t.Fatalf("%s: %v", rt, err)
		}
		var got, want []string
		for _, k := range fault.Kinds {
			if k.Applies(c.Runtime, c.Topology) {
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
			k, _ := fault.KindByName(s.Kind)
			replica, path, _ := strings.Cut(s.Target, ".")
			if k.Action != s.Action || (k.Replica() && kind(replica) != k.Target) || path != k.Path ||
				s.DelayMS != k.Delay.Milliseconds() {
				t.Errorf("%s: step %+v does not match its kind %+v", rt, s, k)
			}
			if got := fault.KindOf(s.Action, s.Target); got != k.Name {
				t.Errorf("%s: KindOf(%s, %s) = %q, want %q", rt, s.Action, s.Target, got, k.Name)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: kinds (-want +got):\n%s", rt, diff)
		}
		if end := steps[len(steps)-1]; load < end.At()+time.Duration(end.ForMS)*time.Millisecond {
			t.Errorf("%s: load %s ends before the last fault %+v does", rt, load, end)
		}
		// make fault-matrix: the load, a 2-minute drain and start-up within 15 minutes
		if load > 11*time.Minute {
			t.Errorf("%s: load %s, want at most 11m", rt, load)
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

// The network kinds run on the local runtime only: compose and kind have
// no Toxiproxy proxies.
func TestNetworkKindsAreLocalOnly(t *testing.T) {
	t.Parallel()
	paths := map[string]bool{}
	for _, k := range fault.Kinds {
		if !k.Action.Network() {
			continue
		}
		paths[k.Target+"."+k.Path] = true
		if diff := cmp.Diff([]string{"local"}, k.Runtimes); diff != "" {
			t.Errorf("%s: runtimes (-want +got):\n%s", k.Name, diff)
		}
		if !k.Replica() || k.Path == "" || k.For <= 0 || k.Aim == fault.AimAny {
			t.Errorf("%s: want a replica class, a path, a duration and the replica's own work as aim: %+v", k.Name, k)
		}
		if (k.Action == fault.ActionLatency || k.Action == fault.ActionSlow) != (k.Delay > 0) {
			t.Errorf("%s: delay %s, want one exactly for latency and slow", k.Name, k.Delay)
		}
	}
	want := map[string]bool{"api.redis": true, "worker.redis": true, "worker.psp": true, "worker.postgres": true}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("network kinds' paths (-want +got):\n%s", diff)
	}
	// a partition must outlast the worker's lease (15s locally) for another
	// worker to take over, and must require that takeover to land
	if k, _ := fault.KindByName("partition-redis"); k.For <= 15*time.Second || !k.Takeover {
		t.Errorf("partition-redis: for %s, takeover %v; want longer than the 15s lease, and a takeover", k.For, k.Takeover)
	}
}

func TestHAMatrixHoldsTheFailoverKinds(t *testing.T) {
	t.Parallel()
	for _, rt := range []string{"local", "compose", "kind"} {
		steps, _, err := fault.MatrixPlan(fault.MatrixConfig{Runtime: rt, Topology: "ha", APIs: apis, Workers: workers, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, s := range steps {
			got[s.Kind] = true
		}
		for _, k := range []string{"failover-redis", "migrate-slot", "kill-rabbitmq-leader", "partition-rabbitmq"} {
			if !got[k] {
				t.Errorf("%s: ha matrix lacks %s: %v", rt, k, steps)
			}
		}
	}
	steps, _, err := fault.MatrixPlan(fault.MatrixConfig{Runtime: "local", Topology: "ha", APIs: apis, Workers: workers, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, s := range steps {
		got[s.Kind] = true
	}
	// the one Redis and the one RabbitMQ do not exist in ha
	for _, k := range []string{"restart-redis", "kill-redis", "flush-redis", "restart-rabbitmq", "kill-rabbitmq", "partition-redis"} {
		if got[k] {
			t.Errorf("ha matrix holds %s, a kind of the single topology", k)
		}
	}
}

func TestMatrixPlanOfSomeKinds(t *testing.T) {
	t.Parallel()
	c := fault.MatrixConfig{Runtime: "local", APIs: apis, Workers: workers, Kinds: []string{"stall-redis"}}
	steps, load, err := fault.MatrixPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || steps[0].Kind != "stall-redis" || steps[0].Target != "redis" || steps[0].ForMS != 2000 {
		t.Errorf("steps %+v, want one stall-redis of redis for 2s", steps)
	}
	if want := 10*time.Second + 2*time.Second + 12*time.Second + 5*time.Second; load != want {
		t.Errorf("load %s, want %s", load, want)
	}
	c.Kinds = []string{"stall-redsi"}
	if _, _, err := fault.MatrixPlan(c); err == nil {
		t.Error("an unknown kind: no error")
	}
}

// TestStallRedisInTheHATopology: the stall of a Redis Cluster primary is
// applied where the backend finds the primary (kind), and only there.
func TestStallRedisInTheHATopology(t *testing.T) {
	k, ok := fault.KindByName("stall-redis")
	if !ok {
		t.Fatal("no kind stall-redis")
	}
	for _, tc := range []struct {
		runtime, topology string
		want              bool
	}{
		{"local", "", true}, {"compose", "single", true}, {"kind", "single", true},
		{"kind", "ha", true}, {"local", "ha", false}, {"compose", "ha", false},
	} {
		if got := k.Applies(tc.runtime, tc.topology); got != tc.want {
			t.Errorf("stall-redis applies on %s/%s = %v, want %v", tc.runtime, tc.topology, got, tc.want)
		}
	}
}
