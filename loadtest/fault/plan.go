package fault

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Action is what a fault does.
type Action string

// The fault actions.
const (
	// ActionKill sends SIGKILL (or its runtime's equivalent) to one replica,
	// after waiting, bounded, until it has work in flight.
	ActionKill Action = "kill"
	// ActionRestart stops a backing service cleanly and starts it again.
	ActionRestart Action = "restart"
	// ActionFlush deletes every key in Redis (FLUSHALL): the boundary
	// forgets everything it knew.
	ActionFlush Action = "flush"
	// ActionPause stops one replica (SIGSTOP) for the step's duration, then
	// lets it go on (SIGCONT): a process frozen past its lease.
	ActionPause Action = "pause"
	// ActionDeleteQueue deletes the charge queue: the broker lost its
	// definitions.
	ActionDeleteQueue Action = "delete-queue"
	// ActionOutage makes the psp fail every call for the step's duration,
	// then puts its configuration back.
	ActionOutage Action = "outage"
	// ActionStall stops a backing service's process (SIGSTOP) for the
	// step's duration, then lets it go on (SIGCONT): the service stalls,
	// its connections stay open and nothing is lost.
	ActionStall Action = "stall"
	// ActionReject makes the psp reject a share of charge calls
	// permanently (a 4xx, nothing charged) for the step's duration, then
	// puts its configuration back.
	ActionReject Action = "reject"
	// The network actions add toxics to one replica's path to one service
	// (loadtest/netfault), for the step's duration, then remove them. The
	// step's target names the path, "<replica>.<service>" (api-1.redis);
	// their values are netfault's kind names.
	//
	// ActionLatency delays every answer on the path by the step's delay.
	ActionLatency Action = "latency"
	// ActionPartition drops every byte both ways, connections kept open.
	ActionPartition Action = "partition"
	// ActionResetPeer cuts the connection as the service starts to answer.
	ActionResetPeer Action = "reset_peer"
	// ActionSlow delays every answer by the step's delay ± a quarter and
	// caps the bandwidth.
	ActionSlow Action = "slow"
	// The failover actions need the HA topology (a Redis Cluster, a
	// RabbitMQ cluster) and a Failoverer backend.
	//
	// ActionFailover SIGKILLs the Redis Cluster primary of a slot in use;
	// its replica takes over and the old primary comes back as a replica.
	ActionFailover Action = "failover"
	// ActionMigrateSlot moves a block of slots around a slot in use to
	// another primary under load (ASK, then MOVED redirects).
	ActionMigrateSlot Action = "migrate-slot"
	// ActionKillLeader SIGKILLs the RabbitMQ node that leads the charge
	// queue and starts it again after the step's duration.
	ActionKillLeader Action = "kill-leader"
	// ActionPartitionNode cuts the node that leads the charge queue off
	// from the other nodes for the step's duration.
	ActionPartitionNode Action = "partition-node"
	// ActionSwitchover hands the Postgres primary over to the synchronous
	// standby, planned (Patroni's switchover).
	ActionSwitchover Action = "switchover"
	// ActionFailoverLagged drops the Postgres leader's replication stream
	// for the step's delay under load, then fails it over as
	// ActionFailover: its replicas are behind at the kill.
	ActionFailoverLagged Action = "failover-lagged"
)

// Network reports whether a is a network action.
func (a Action) Network() bool {
	return a == ActionLatency || a == ActionPartition || a == ActionResetPeer || a == ActionSlow
}

// Failover reports whether a is a failover of an HA cluster's node:
// failover (lagged or not), migrate-slot, kill-leader, partition-node or
// switchover.
func (a Action) Failover() bool {
	return a == ActionFailover || a == ActionFailoverLagged || a == ActionMigrateSlot || a == ActionKillLeader ||
		a == ActionPartitionNode || a == ActionSwitchover
}

// Step is one planned fault: do Action to Target At after the start.
type Step struct {
	AtMS   int64  `json:"at_ms"`
	Kind   string `json:"kind,omitempty"` // the Kinds entry; empty in plans that predate it
	Action Action `json:"action"`
	// Target is a replica (api-1), a service (rabbitmq, redis) or, for a
	// network action, one replica's path to a service (worker-1.redis).
	Target string `json:"target"`
	// ForMS is how long a fault with a duration lasts (pause, outage,
	// network faults).
	ForMS int64 `json:"for_ms,omitempty"`
	// DelayMS is the delay of a latency or slow fault; zero means its
	// kind's Delay.
	DelayMS int64 `json:"delay_ms,omitempty"`
}

// At returns the step's offset from the start of the load.
func (s Step) At() time.Duration { return time.Duration(s.AtMS) * time.Millisecond }

func (s Step) String() string {
	return fmt.Sprintf("%s %s %s", s.At(), s.Action, s.Target)
}

// PlanConfig shapes a schedule.
type PlanConfig struct {
	Duration time.Duration // how long the load runs
	APIs     []string      // api replicas to kill, in turn
	Workers  []string      // worker replicas to kill, in turn
	// KillEvery is the gap between kills; zero means Duration/10, kept
	// between 6 s and 18 s.
	KillEvery time.Duration
	Seed      uint64 // jitter of ±1 s on every kill; the same seed gives the same plan
	// Runtime (local, compose, kind) decides which of the longer runs'
	// extra faults (longRunFaults) the plan holds; empty means local.
	Runtime string
	// Topology single ("" too) or ha: ha plans fail the clusters over
	// (haServiceFaults) instead of restarting the one Redis and RabbitMQ.
	Topology string
}

// The backing-service faults happen once each, at these fractions of the
// run. The FLUSHALL comes before the middle, so that the worker kills after
// it leave leases behind that only a takeover can free (a FLUSHALL would
// free them, and no takeover would be needed); the Redis restart keeps the
// data (Redis saves it on SIGTERM).
var serviceFaults = []timedKind{
	{0.20, "restart-rabbitmq"},
	{0.50, "flush-redis"},
	{0.75, "restart-redis"},
}

// haServiceFaults take their place in the ha topology: the charge queue's
// leader node killed (and restarted after its kind's For), a Redis primary
// failed over, a block of slots migrated.
var haServiceFaults = []timedKind{
	{0.20, "kill-rabbitmq-leader"},
	{0.50, "failover-redis"},
	{0.75, "migrate-slot"},
}

// timedKind is a fault of a kind at a fraction of the run.
type timedKind struct {
	at   float64
	kind string
}

// longRunFaults are added to runs of longRun or more, if the runtime can
// apply them in their topology: a Postgres crash (ha: its leader's host
// gone, the synchronous standby promoted) and a worker frozen past its lease.
var longRunFaults = []timedKind{
	{0.35, "kill-postgres"},
	{0.35, "failover-postgres"},
	{0.60, "pause-worker"},
}

// longRun is the shortest run that holds longRunFaults (make demo's 180 s
// does; make test-demo's and make compare's 60 s do not).
const longRun = 150 * time.Second

// brokerOutage is how long a RabbitMQ restart keeps the workers idle (the
// restart takes 10-15 s on a small machine): no worker is killed then,
// since it would have nothing in flight.
const brokerOutage = 16 * time.Second

// minGap keeps a kill this far from a service fault, so the effects of the
// two can be told apart on the timeline.
const minGap = 4 * time.Second

// Plan returns the fault schedule for one run, ordered by time: one restart
// of RabbitMQ, one FLUSHALL of Redis and one restart of Redis at fixed
// fractions of the run (20%, 50%, 75%); in runs of longRun or more also a
// SIGKILL of Postgres (35%) and a pause of worker-1 (60%), where the
// runtime can apply them; and kills every KillEvery in between, alternating api
// and worker replicas (api-1, worker-1, api-2, worker-2, ...), except that
// no worker is killed while the broker restarts, and the first kill after
// the FLUSHALL is a worker's. Kills keep minGap from each other and from
// the service faults. Nothing
// happens in the first and last sixth of the run (at most 10 s and 15 s), so
// the load is steady before the first fault and the last faults can land
// before the load stops. It fails if the run is too short to hold one kill
// of each kind besides the service faults, or a replica list is empty.
func Plan(c PlanConfig) ([]Step, error) {
	if len(c.APIs) == 0 || len(c.Workers) == 0 {
		return nil, fmt.Errorf("plan: need at least one api and one worker replica")
	}
	lead := min(10*time.Second, c.Duration/6)
	tail := min(15*time.Second, c.Duration/6)
	every := c.KillEvery
	if every <= 0 {
		every = min(max(c.Duration/10, 6*time.Second), 18*time.Second)
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x6f6e6365))

	var steps []Step
	faults := serviceFaults
	if c.Topology == "ha" {
		faults = haServiceFaults
	}
	for _, f := range faults {
		k, _ := KindByName(f.kind)
		if c.Topology == "ha" && !k.On(cmp.Or(c.Runtime, "local")) {
			continue // a fault the runtime's backend cannot apply
		}
		at := time.Duration(float64(c.Duration) * f.at).Round(time.Second)
		steps = append(steps, Step{AtMS: at.Milliseconds(), Kind: k.Name, Action: k.Action, Target: k.Target, ForMS: k.For.Milliseconds()})
	}
	if c.Duration >= longRun {
		runtime := cmp.Or(c.Runtime, "local")
		for _, f := range longRunFaults {
			k, _ := KindByName(f.kind)
			if !k.On(runtime) || !k.In(c.Topology) {
				continue
			}
			target := k.Target
			if target == "worker" {
				target = c.Workers[0]
			}
			at := time.Duration(float64(c.Duration) * f.at).Round(time.Second)
			steps = append(steps, Step{AtMS: at.Milliseconds(), Kind: k.Name, Action: k.Action, Target: target, ForMS: k.For.Milliseconds()})
		}
	}
	services := slices.Clone(steps)
	// clear moves a kill that would land within minGap of a service fault
	// to minGap after it.
	clear := func(at time.Duration) time.Duration {
		for _, s := range services {
			if d := at - s.At(); d > -minGap && d < minGap {
				return s.At() + minGap
			}
		}
		return at
	}
	brokerAt, flushAt := services[0].At(), services[1].At()

	kills, apiKills, workerKills := 0, 0, 0
	workerTurn, last := false, time.Duration(-1)
	for slot := lead; slot <= c.Duration-tail; slot += every {
		at := slot + time.Duration(rng.Int64N(2001)-1000)*time.Millisecond
		at = clear(max(lead, min(at, c.Duration-tail)))
		if at > c.Duration-tail || (last >= 0 && at-last < minGap) {
			continue
		}
		worker := workerTurn
		if at > flushAt && last < flushAt {
			worker = true
		}
		if at >= brokerAt && at < brokerAt+brokerOutage {
			worker = false
		}
		var target string
		if worker {
			target = c.Workers[workerKills%len(c.Workers)]
			workerKills++
		} else {
			target = c.APIs[apiKills%len(c.APIs)]
			apiKills++
		}
		steps = append(steps, Step{AtMS: at.Milliseconds(), Kind: KindOf(ActionKill, target), Action: ActionKill, Target: target})
		kills++
		workerTurn = !worker
		last = at
	}
	if apiKills == 0 || workerKills == 0 {
		return nil, fmt.Errorf("plan: %s leaves room for %d api and %d worker kill(s), want one of each at least; need a longer run (60s or more) or a shorter kill interval", c.Duration, apiKills, workerKills)
	}
	slices.SortStableFunc(steps, func(a, b Step) int { return int(a.AtMS - b.AtMS) })
	return steps, nil
}
