package fault

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Aim is where a fault must land for it to prove anything: the driver
// waits, bounded, until the aimed-at work is in flight, then applies the
// fault; the event records whether it was.
type Aim string

// The aims.
const (
	// AimRequest: an api replica has a client request received and not yet
	// answered (for a replica fault: the target itself).
	AimRequest Aim = "request"
	// AimCharge: a worker has a psp call sent and not yet answered (for a
	// replica fault: the target itself).
	AimCharge Aim = "charge"
	// AimAny: any replica, api or worker, has work in flight (a fault of a
	// service every replica uses).
	AimAny Aim = "any"
)

// Kind is one kind of fault of the matrix: what it does, to what, where it
// must land, on which runtimes it can run and what it exercises. A plan
// step names its kind; the driver applies it by its Action.
type Kind struct {
	Name   string // kill-api, pause-worker, kill-postgres, ...
	Action Action
	// Target is the replica class (api, worker) the plan picks a replica
	// of, or the service (postgres, redis, rabbitmq, psp) itself.
	Target string
	// Path, for a network kind, is the service on the target replica's
	// way that the fault hits (redis, postgres, psp): the step's target
	// is the replica's proxy to it, "<replica>.<path>".
	Path string
	Aim  Aim
	// Delay is a latency or slow fault's delay on every answer.
	Delay time.Duration
	// Share is a reject fault's share of the psp's charge calls rejected.
	Share float64
	// For is how long the fault lasts, for faults with a duration (a
	// pause, an outage); zero for the others. The plan may scale it.
	For time.Duration
	// Settle is how long a matrix plan leaves after the fault (after For)
	// before the next one, so that each fault's effects show apart.
	Settle time.Duration
	// Takeover: the fault lands only if a worker takes a lease over within
	// For plus Settle after it (a frozen worker's lease must expire and be
	// taken, or the zombie owner was never put to the test).
	Takeover bool
	// Runtimes are the runtimes whose backends can apply it.
	Runtimes []string
	// Topologies are the stateful tier's shapes (single, ha) it applies
	// to; none means both.
	Topologies []string
	// HARuntimes, if set, are the runtimes that can apply it in the ha
	// topology (a subset of Runtimes).
	HARuntimes []string
	// Exercises says which failure window it opens, for people.
	Exercises string
	// Invariants are the numbers (docs/demo.md) it puts to the test.
	Invariants []int
}

// Replica reports whether the kind's target is a replica class, so that a
// plan names one replica of it (or, with a Path, that replica's proxy).
func (k Kind) Replica() bool { return k.Target == "api" || k.Target == "worker" }

// On reports whether runtime can apply the kind.
func (k Kind) On(runtime string) bool { return slices.Contains(k.Runtimes, runtime) }

// In reports whether the kind applies to topology; "" is single.
func (k Kind) In(topology string) bool {
	return len(k.Topologies) == 0 || slices.Contains(k.Topologies, cmp.Or(topology, "single"))
}

// Applies reports whether runtime can apply the kind in topology.
func (k Kind) Applies(runtime, topology string) bool {
	if !k.On(runtime) || !k.In(topology) {
		return false
	}
	return topology != "ha" || k.HARuntimes == nil || slices.Contains(k.HARuntimes, runtime)
}

var (
	everywhere = []string{"local", "compose", "kind"}
	localOnly  = []string{"local"}
	// the runtimes that run Postgres under Patroni in the ha topology and
	// whose backends carry out its faults
	patroniRuntimes = []string{"local", "compose"}
	// single: a kind of the one Redis or the one RabbitMQ (or of a
	// replica's Toxiproxy path to the one Redis); ha: of their clusters.
	single = []string{"single"}
	ha     = []string{"ha"}
)

// Kinds is the fault matrix, in the order a matrix plan applies it (the
// queue deletion last: until the product redeclares a deleted queue, no
// charge runs after it). A new kind is one entry here, an Action the
// driver knows, and a Backend method per runtime (the network kinds: the
// driver's Network, loadtest/netfault's Toxiproxy proxies of the local
// runtime).
var Kinds = []Kind{
	{Name: "kill-api", Action: ActionKill, Target: "api", Aim: AimRequest, Runtimes: everywhere,
		Exercises: "a request cut off after the api stage began, before the answer", Invariants: []int{1, 2, 5, 6}},
	{Name: "kill-worker", Action: ActionKill, Target: "worker", Aim: AimCharge, Runtimes: everywhere,
		Exercises: "a charge cut off mid psp call; the lease expires and another worker takes over", Invariants: []int{3, 4, 5, 6}},
	{Name: "failover-redis", Action: ActionFailover, Target: "redis", Aim: AimAny, Runtimes: everywhere, Topologies: ha,
		Exercises: "the Redis Cluster primary of a slot in use SIGKILLed: its replica, up to a second behind (AOF everysec, async replication), takes over; the old one returns as a replica", Invariants: []int{2, 3, 5}},
	{Name: "migrate-slot", Action: ActionMigrateSlot, Target: "redis", Aim: AimAny, Runtimes: everywhere, Topologies: ha,
		Exercises: "a block of slots moved between primaries under load: ASK and MOVED redirects while the scripts run", Invariants: []int{2, 5}},
	{Name: "partition-rabbitmq", Action: ActionPartitionNode, Target: "rabbitmq", Aim: AimAny, For: 20 * time.Second, Settle: 25 * time.Second,
		Runtimes: everywhere, Topologies: ha,
		Exercises: "the charge queue's leader cut off from the other two nodes for 20s (pause_minority pauses it): the majority elects a new leader", Invariants: []int{4, 5}},
	{Name: "kill-rabbitmq-leader", Action: ActionKillLeader, Target: "rabbitmq", Aim: AimAny, For: 15 * time.Second, Settle: 25 * time.Second,
		Runtimes: everywhere, Topologies: ha,
		Exercises: "the RabbitMQ node leading the charge queue SIGKILLed mid-publish and restarted 15s later: a new leader, clients reconnect to a live node", Invariants: []int{4, 5}},
	{Name: "restart-rabbitmq", Action: ActionRestart, Target: "rabbitmq", Aim: AimAny, Settle: 50 * time.Second, Runtimes: everywhere, Topologies: single,
		Exercises: "the broker gone for seconds: outbox backlog, redeliveries", Invariants: []int{4, 5}},
	{Name: "flush-redis", Action: ActionFlush, Target: "redis", Aim: AimAny, Runtimes: everywhere, Topologies: single,
		Exercises: "the boundary forgets every key: the durable backstops alone", Invariants: []int{2, 3}},
	{Name: "restart-redis", Action: ActionRestart, Target: "redis", Aim: AimAny, Runtimes: everywhere, Topologies: single,
		Exercises: "the boundary unreachable for a moment, data kept", Invariants: []int{2, 5}},
	{Name: "restart-postgres", Action: ActionRestart, Target: "postgres", Aim: AimAny, Runtimes: localOnly, Topologies: single,
		Exercises: "the system of record shut down cleanly under load: transactions and CAS retried", Invariants: []int{1, 4, 5}},
	{Name: "kill-postgres", Action: ActionKill, Target: "postgres", Aim: AimAny, Runtimes: localOnly, Topologies: single,
		Exercises: "the system of record crashes (SIGKILL) mid-transaction and recovers from its WAL", Invariants: []int{1, 3, 4, 5}},
	{Name: "kill-redis", Action: ActionKill, Target: "redis", Aim: AimAny, Runtimes: localOnly, Topologies: single,
		Exercises: "Redis crashes (SIGKILL) with AOF everysec: up to the last second of transitions lost", Invariants: []int{2, 3, 5}},
	{Name: "kill-rabbitmq", Action: ActionKill, Target: "rabbitmq", Aim: AimAny, Settle: 65 * time.Second, Runtimes: localOnly, Topologies: single,
		Exercises: "the broker crashes (SIGKILL): unconfirmed publishes and unacked deliveries", Invariants: []int{4, 5}},
	{Name: "pause-worker", Action: ActionPause, Target: "worker", Aim: AimCharge, For: 35 * time.Second, Takeover: true, Runtimes: localOnly,
		Exercises: "a worker frozen mid psp call past its lease and the broker's heartbeat timeout, then resumed: another worker takes over, the zombie owner must write nothing", Invariants: []int{3, 5, 6}},
	{Name: "pause-api", Action: ActionPause, Target: "api", Aim: AimRequest, For: 12 * time.Second, Runtimes: localOnly,
		Exercises: "an api replica frozen mid-request past its lease, then resumed", Invariants: []int{1, 2, 5}},
	{Name: "latency-redis", Action: ActionLatency, Target: "api", Path: "redis", Aim: AimRequest, Delay: 2 * time.Second,
		For: 5 * time.Second, Settle: 10 * time.Second, Runtimes: localOnly, Topologies: single,
		Exercises: "one api replica's Redis answers 2s late, above IDEM_TIMEOUT: it answers 503 and fails closed; the claims its timed-out Begins made are released in the background, or hold the key until their lease ends", Invariants: []int{1, 2, 5, 7}},
	{Name: "partition-redis", Action: ActionPartition, Target: "worker", Path: "redis", Aim: AimCharge,
		For: 20 * time.Second, Settle: 10 * time.Second, Takeover: true, Runtimes: localOnly, Topologies: single,
		Exercises: "one worker cut off from Redis mid-charge past its lease while the other reaches it: the cut-off one stops at its lease deadline, the other takes over", Invariants: []int{3, 5, 6}},
	{Name: "reset-psp", Action: ActionResetPeer, Target: "worker", Path: "psp", Aim: AimCharge,
		For: 5 * time.Second, Settle: 8 * time.Second, Runtimes: localOnly,
		Exercises: "one worker's psp answers cut by connection resets after the psp charged: outcome unknown, retried under the same key", Invariants: []int{3, 4}},
	{Name: "slow-postgres", Action: ActionSlow, Target: "worker", Path: "postgres", Aim: AimCharge, Delay: 300 * time.Millisecond,
		For: 8 * time.Second, Settle: 7 * time.Second, Runtimes: localOnly, Topologies: single,
		Exercises: "one worker's Postgres answers 300ms ± 75ms late mid-charge: charges slow down under a held lease, none lost or doubled", Invariants: []int{3, 4, 5}},
	{Name: "psp-outage", Action: ActionOutage, Target: "psp", Aim: AimCharge, For: 150 * time.Second, Settle: 10 * time.Second, Runtimes: localOnly,
		Exercises: "the psp fails every call for 150s, past the workers' retry delays (local: 1s, 5s, then 15s again without limit), then recovers", Invariants: []int{3, 4}},
	{Name: "stall-redis", Action: ActionStall, Target: "redis", Aim: AimRequest, For: 2 * time.Second, Settle: 12 * time.Second,
		Runtimes: everywhere, HARuntimes: []string{"local", "kind"},
		Exercises: "Redis (in a cluster: the primary serving a key in use) frozen (SIGSTOP) for 2s under load, below the cluster's node timeout, then resumed: the api sheds with 503 while it stalls, and the work queued meanwhile must not outlive its callers", Invariants: []int{2, 5, 8}},
	{Name: "reject-psp", Action: ActionReject, Target: "psp", Aim: AimCharge, For: 15 * time.Second, Settle: 15 * time.Second, Share: 0.3,
		Runtimes:  everywhere,
		Exercises: "the psp rejects 30% of charges permanently (4xx) for 15s: each such payment ends failed with the provider's reason, none pending or dead-lettered, the others still settle", Invariants: []int{4, 8}},
	{Name: "delete-queue", Action: ActionDeleteQueue, Target: "rabbitmq", Aim: AimRequest, Runtimes: localOnly, Topologies: single,
		Exercises: "the broker loses the charge queue while the api publishes: unroutable messages", Invariants: []int{4, 5},
		Settle: 20 * time.Second},
	{Name: "failover-postgres", Action: ActionFailover, Target: "postgres", Aim: AimAny, Settle: 20 * time.Second,
		Runtimes: patroniRuntimes, Topologies: ha,
		Exercises: "the Patroni leader's host gone (SIGKILL of its Patroni and Postgres) mid-transaction: after the leader key's TTL the synchronous standby is promoted, the old node rejoins as a replica (pg_rewind if needed); no acknowledged commit may be missing", Invariants: []int{1, 3, 4, 5, 7}},
	{Name: "failover-postgres-lagged", Action: ActionFailoverLagged, Target: "postgres", Aim: AimAny, Delay: 2 * time.Second, Settle: 20 * time.Second,
		Runtimes: localOnly, Topologies: ha,
		Exercises: "the Patroni leader's replication stream dropped for 2s under load (its replicas connected, behind), then its host gone: synchronous replication held those commits unacknowledged, so the promoted standby has every acknowledged one; asynchronous replication would have acknowledged and lost them", Invariants: []int{1, 3, 4, 5, 7}},
	{Name: "switchover-postgres", Action: ActionSwitchover, Target: "postgres", Aim: AimAny, Settle: 20 * time.Second,
		Runtimes: patroniRuntimes, Topologies: ha,
		Exercises: "a planned Patroni switchover to the synchronous standby under load: the old primary stops, connections are cut, clients find the new one", Invariants: []int{1, 4, 5, 7}},
	{Name: "partition-postgres", Action: ActionPartitionNode, Target: "postgres", Aim: AimAny, For: 25 * time.Second, Settle: 20 * time.Second,
		Runtimes: patroniRuntimes, Topologies: ha,
		Exercises: "the Patroni leader cut from etcd and the other nodes for 25s while its Postgres still serves clients: it must demote itself when it cannot renew its leader key, the synchronous standby is promoted, no two primaries accept writes", Invariants: []int{1, 2, 4, 5, 7}},
}

// KindByName returns the kind called name.
func KindByName(name string) (Kind, bool) {
	i := slices.IndexFunc(Kinds, func(k Kind) bool { return k.Name == name })
	if i < 0 {
		return Kind{}, false
	}
	return Kinds[i], true
}

// KindOf names the kind of a step or event that has none recorded (plans
// and logs from before kinds had names): the action and the target's class
// (and, for a network target "<replica>.<service>", its service).
func KindOf(action Action, target string) string {
	class, path := target, ""
	if i := strings.LastIndexByte(target, '.'); i > 0 {
		class, path = target[:i], target[i+1:]
	}
	for _, c := range []string{"api", "worker"} {
		if strings.HasPrefix(class, c+"-") {
			class = c
		}
	}
	for _, k := range Kinds {
		if k.Action == action && k.Target == class && k.Path == path {
			return k.Name
		}
	}
	if path != "" {
		return fmt.Sprintf("%s-%s-%s", action, class, path)
	}
	return fmt.Sprintf("%s-%s", action, class)
}
