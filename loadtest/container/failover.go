package container

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oncepay/oncepay/loadtest/fault"
)

// node is one Redis or RabbitMQ node of a container runtime's HA topology.
type node struct {
	Name string // as reports name it: redis-3, rabbitmq-2
	// Host is the pod's or the container's host name, which a RabbitMQ
	// node name holds after the @: rabbit@<Host>[.<domain>].
	Host string
	Ref  string // what the runtime addresses: the pod name, the container id
	UID  string // Kube: the pod's uid, which a new pod of the same name does not share
}

// stateNodes is how the failover faults reach a runtime's Redis Cluster
// and RabbitMQ nodes. Kube and Docker implement it.
type stateNodes interface {
	// nodes lists the running nodes of service (redis, rabbitmq), by name.
	nodes(ctx context.Context, service string) ([]node, error)
	// exec runs argv in the node's main container and returns its stdout.
	exec(ctx context.Context, service string, n node, argv ...string) ([]byte, error)
	// down takes the node down the way a crash does and returns how to
	// let it come back: nil when the runtime starts it again by itself.
	// It must keep the node from answering for at least a failure
	// detection (Redis: cluster-node-timeout), or no failover happens.
	down(ctx context.Context, service string, n node) (release func(context.Context) error, err error)
	// back waits until a node called name runs again (a new pod, the
	// container started) and returns it.
	back(ctx context.Context, service, name string, old node) (node, error)
}

// failover carries out fault.Failoverer's faults on stateNodes: the same
// steps as scripts/harness's failover commands, through the runtime's exec.
type failover struct {
	rt stateNodes
	// Probe is the gap between two probe writes (Redis, 200 ms), two
	// looks at the queue's leader (RabbitMQ, 2 s: each look starts an
	// Erlang VM, which a small machine cannot afford more often) and two
	// looks at Patroni's cluster (200 ms, each a few execs).
	redisProbe, leaderProbe, pgProbe time.Duration
	// TakeoverTimeout bounds the wait for a new primary or leader (60 s);
	// BackTimeout the wait for the killed node's return (3 min).
	takeoverTimeout, backTimeout time.Duration
	now                          func() time.Time
	sleep                        func(ctx context.Context, d time.Duration) error
}

func newFailover(rt stateNodes) *failover {
	return &failover{
		rt: rt, redisProbe: 200 * time.Millisecond, leaderProbe: 2 * time.Second, pgProbe: 200 * time.Millisecond,
		takeoverTimeout: time.Minute, backTimeout: 3 * time.Minute,
		now: time.Now, sleep: sleepCtx,
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	ID, Master string
	Addr       string // ip:port, as the node announces it
	Primary    bool
	Failed     bool
	Slots      [][2]int
}

// parseClusterNodes reads CLUSTER NODES: id addr flags master ping pong
// epoch link slot... (slots under migration, "[...]", are skipped).
func parseClusterNodes(out string) []clusterNode {
	var nodes []clusterNode
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		n := clusterNode{ID: f[0], Addr: addr, Master: f[3], Primary: strings.Contains(f[2], "master"),
			Failed: strings.Contains(f[2], "fail")}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue
			}
			lo, hi, ok := strings.Cut(s, "-")
			if !ok {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 == nil && err2 == nil {
				n.Slots = append(n.Slots, [2]int{a, b})
			}
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// slotOwner returns the healthy primary serving slot.
func slotOwner(nodes []clusterNode, slot int) (clusterNode, bool) {
	for _, n := range nodes {
		if !n.Primary || n.Failed {
			continue
		}
		for _, r := range n.Slots {
			if slot >= r[0] && slot <= r[1] {
				return n, true
			}
		}
	}
	return clusterNode{}, false
}

// probeKey is a key of key's slot for probe writes: the same hash tag.
func probeKey(key string) string {
	tag := key
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			tag = key[i+1 : i+1+j]
		}
	}
	return "{" + tag + "}:oncepay-probe"
}

func trimOut(b []byte) string { return strings.TrimSpace(string(b)) }

// redisCLI runs redis-cli in node n (the password comes from the node's
// REDISCLI_AUTH), bounded by 3 s inside the node.
func (f *failover) redisCLI(ctx context.Context, n node, args ...string) (string, error) {
	return f.redisCLIWithin(ctx, 3, n, args...)
}

// redisCLIWithin bounds redis-cli by seconds inside the node: a frozen or
// unreachable node the cluster redirects to must not hang a probe.
func (f *failover) redisCLIWithin(ctx context.Context, seconds int, n node, args ...string) (string, error) {
	out, err := f.rt.exec(ctx, "redis", n, append([]string{"timeout", strconv.Itoa(seconds), "redis-cli"}, args...)...)
	return trimOut(out), err
}

// redisView maps cluster node ids to the runtime's nodes (CLUSTER MYID on
// each, at once) and returns the cluster as the first answering node sees
// it.
func (f *failover) redisView(ctx context.Context) (map[string]node, []clusterNode, error) {
	nodes, err := f.rt.nodes(ctx, "redis")
	if err != nil {
		return nil, nil, err
	}
	ids := make([]string, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			ids[i], errs[i] = f.redisCLI(ctx, n, "cluster", "myid")
		})
	}
	wg.Wait()
	byID := map[string]node{}
	var view []clusterNode
	for i, n := range nodes {
		if errs[i] != nil || ids[i] == "" {
			errs[i] = fmt.Errorf("%s: cluster myid: %v", n.Name, errs[i])
			continue
		}
		byID[ids[i]] = n
		if view == nil {
			if out, err := f.redisCLI(ctx, n, "cluster", "nodes"); err == nil {
				view = parseClusterNodes(out)
			}
		}
	}
	if view == nil {
		return nil, nil, fmt.Errorf("no Redis node answers CLUSTER NODES: %w", errors.Join(errs...))
	}
	return byID, view, nil
}

// FailoverRedis takes down the primary serving a slot the load uses (a
// random key's), probes a write to that slot through another primary
// until one succeeds (its replica took over: Cost.RefusedMS), lets the
// node come back and waits until it is a replica.
func (f *failover) FailoverRedis(ctx context.Context) (fault.Cost, error) {
	c := fault.Cost{RefusedMS: -1}
	byID, view, err := f.redisView(ctx)
	if err != nil {
		return c, fmt.Errorf("failover-redis: %w", err)
	}
	var primaries []clusterNode
	for _, n := range view {
		if n.Primary && !n.Failed && len(n.Slots) > 0 {
			if _, ok := byID[n.ID]; ok {
				primaries = append(primaries, n)
			}
		}
	}
	if len(primaries) < 2 {
		return c, fmt.Errorf("failover-redis: %d healthy primaries found, want 2 or more", len(primaries))
	}
	from := byID[primaries[rand.IntN(len(primaries))].ID]
	key, err := f.redisCLI(ctx, from, "randomkey")
	if err != nil || key == "" {
		key = "oncepay-probe"
	}
	s, err := f.redisCLI(ctx, from, "cluster", "keyslot", key)
	slot, perr := strconv.Atoi(s)
	if err != nil || perr != nil {
		return c, fmt.Errorf("failover-redis: keyslot of %q on %s: %q %v", key, from.Name, s, err)
	}
	c.Slot = slot
	owner, ok := slotOwner(view, slot)
	victim, known := byID[owner.ID]
	if !ok || !known {
		return c, fmt.Errorf("failover-redis: no known primary serves slot %d", slot)
	}
	c.Node = victim.Name
	var via node
	for _, p := range primaries {
		if p.ID != owner.ID {
			via = byID[p.ID]
			break
		}
	}
	probe := probeKey(key)

	t0 := f.now()
	release, err := f.rt.down(ctx, "redis", victim)
	if err != nil {
		return c, fmt.Errorf("failover-redis: take %s down: %w", victim.Name, err)
	}
	for f.now().Sub(t0) < f.takeoverTimeout {
		if out, err := f.redisCLIWithin(ctx, 1, via, "-c", "set", probe, "1", "px", "60000"); err == nil && out == "OK" {
			c.RefusedMS = f.now().Sub(t0).Milliseconds()
			break
		}
		if err := f.sleep(ctx, f.redisProbe); err != nil {
			break
		}
	}
	var errs []error
	if c.RefusedMS < 0 {
		errs = append(errs, fmt.Errorf("failover-redis: no replica took slot %d over within %s", slot, f.takeoverTimeout))
	}
	if release != nil {
		if err := release(context.WithoutCancel(ctx)); err != nil {
			errs = append(errs, fmt.Errorf("failover-redis: bring %s back: %w", victim.Name, err))
		}
	}
	newOwner := "?"
	if out, err := f.redisCLI(ctx, via, "cluster", "nodes"); err == nil {
		if o, ok := slotOwner(parseClusterNodes(out), slot); ok {
			if n, ok := byID[o.ID]; ok {
				newOwner = n.Name
			}
		}
	}
	role := "?"
	if back, err := f.rt.back(ctx, "redis", victim.Name, victim); err != nil {
		errs = append(errs, fmt.Errorf("failover-redis: %s: %w", victim.Name, err))
	} else {
		for start := f.now(); f.now().Sub(start) < f.backTimeout; {
			out, err := f.redisCLI(ctx, back, "role")
			if err == nil {
				role, _, _ = strings.Cut(out, "\n")
				if role == "slave" {
					break
				}
			}
			if f.sleep(ctx, time.Second) != nil {
				break
			}
		}
		if role != "slave" {
			errs = append(errs, fmt.Errorf("failover-redis: %s came back as %s, want a replica", victim.Name, role))
		}
	}
	c.Detail = fmt.Sprintf("slot %d now on %s; %s is a %s again after %s", slot, newOwner, victim.Name, role,
		f.now().Sub(t0).Round(time.Second))
	return c, errors.Join(errs...)
}

// slotPrimary returns the node that serves the slot of a key the load
// uses (a random key's, asked of a random primary): a node whose freeze
// the clients feel.
func (f *failover) slotPrimary(ctx context.Context) (node, error) {
	byID, view, err := f.redisView(ctx)
	if err != nil {
		return node{}, err
	}
	var primaries []clusterNode
	for _, n := range view {
		if _, ok := byID[n.ID]; ok && n.Primary && !n.Failed && len(n.Slots) > 0 {
			primaries = append(primaries, n)
		}
	}
	if len(primaries) == 0 {
		return node{}, errors.New("no healthy primary with slots")
	}
	from := byID[primaries[rand.IntN(len(primaries))].ID]
	key, err := f.redisCLI(ctx, from, "randomkey")
	if err != nil || key == "" {
		return from, nil
	}
	s, err := f.redisCLI(ctx, from, "cluster", "keyslot", key)
	slot, perr := strconv.Atoi(s)
	if err != nil || perr != nil {
		return from, nil
	}
	if owner, ok := slotOwner(view, slot); ok {
		if n, ok := byID[owner.ID]; ok {
			return n, nil
		}
	}
	return from, nil
}

// migrateSlots is how many slots MigrateSlot moves, as the harness does.
const migrateSlots = 256

// MigrateSlot moves a block of slots, from a slot the load uses (a random
// key's) up to 256 slots on within its primary's range, to another primary
// while the load runs, as scripts/harness migrate-slot does: SETSLOT
// IMPORTING on the target, MIGRATING on the source, MIGRATE of their keys
// (rounds, until none is left: new keys arrive meanwhile), then SETSLOT
// NODE on every primary. Clients get ASK and then MOVED redirects.
func (f *failover) MigrateSlot(ctx context.Context) (fault.Cost, error) {
	c := fault.Cost{RefusedMS: 0}
	byID, view, err := f.redisView(ctx)
	if err != nil {
		return fault.Cost{RefusedMS: -1}, fmt.Errorf("migrate-slot: %w", err)
	}
	var primaries []clusterNode
	for _, n := range view {
		if _, ok := byID[n.ID]; ok && n.Primary && !n.Failed && len(n.Slots) > 0 {
			primaries = append(primaries, n)
		}
	}
	if len(primaries) < 2 {
		return c, fmt.Errorf("migrate-slot: %d healthy primaries found, want 2 or more", len(primaries))
	}
	from := byID[primaries[rand.IntN(len(primaries))].ID]
	key, err := f.redisCLI(ctx, from, "randomkey")
	if err != nil || key == "" {
		key = "oncepay-probe"
	}
	out, err := f.redisCLI(ctx, from, "cluster", "keyslot", key)
	slot, perr := strconv.Atoi(out)
	if err != nil || perr != nil {
		return c, fmt.Errorf("migrate-slot: keyslot of %q on %s: %q %v", key, from.Name, out, err)
	}
	src, ok := slotOwner(view, slot)
	if !ok {
		return c, fmt.Errorf("migrate-slot: no primary serves slot %d", slot)
	}
	last := slot
	for _, r := range src.Slots {
		if slot >= r[0] && slot <= r[1] {
			last = min(r[1], slot+migrateSlots-1)
		}
	}
	var dst clusterNode
	for _, i := range rand.Perm(len(primaries)) {
		if primaries[i].ID != src.ID {
			dst = primaries[i]
			break
		}
	}
	srcN, dstN := byID[src.ID], byID[dst.ID]
	c.Node, c.Slot, c.Slots = srcN.Name, slot, last-slot+1
	host, port, ok := strings.Cut(dst.Addr, ":")
	if !ok {
		return c, fmt.Errorf("migrate-slot: %s announces no address (%q)", dstN.Name, dst.Addr)
	}
	t0 := f.now()
	setslot := func(n node, state, id string) error {
		script := fmt.Sprintf(`for s in $(seq %d %d); do echo "CLUSTER SETSLOT $s %s %s"; done | redis-cli | grep -v '^OK$' | head -n 1 | grep . && exit 1; exit 0`,
			slot, last, state, id)
		out, err := f.rt.exec(ctx, "redis", n, "bash", "-c", script)
		if err != nil {
			return fmt.Errorf("SETSLOT %s on %s: %w: %s", state, n.Name, err, trimOut(out))
		}
		return nil
	}
	if err := setslot(dstN, "IMPORTING", src.ID); err != nil {
		return c, fmt.Errorf("migrate-slot: %w", err)
	}
	if err := setslot(srcN, "MIGRATING", dst.ID); err != nil {
		return c, fmt.Errorf("migrate-slot: %w", err)
	}
	// in the source: rounds of MIGRATE, one per key (MIGRATE ... KEYS
	// refuses keys of several slots), until the slots hold no key
	script := fmt.Sprintf(`auth=(); [ -n "${REDISCLI_AUTH:-}" ] && auth=(AUTH "$REDISCLI_AUTH")
moved=0
for round in $(seq 20); do
  mapfile -t keys < <(for s in $(seq %d %d); do echo "CLUSTER GETKEYSINSLOT $s 1000"; done | redis-cli | grep .)
  if [ ${#keys[@]} -eq 0 ]; then echo "moved $moved"; exit 0; fi
  out=$(for k in "${keys[@]}"; do printf 'MIGRATE %%s %%s "%%s" 0 10000 %%s
' %q %q "$k" "${auth[*]}"; done | redis-cli)
  bad=$(grep -v -e '^OK$' -e '^NOKEY$' <<<"$out" | head -n 1)
  if [ -n "$bad" ]; then echo "MIGRATE: $bad"; exit 1; fi
  moved=$((moved + $(grep -c '^OK$' <<<"$out")))
done
echo "keys still left in the slots after 20 rounds"; exit 1`, slot, last, host, port)
	raw, err := f.rt.exec(ctx, "redis", srcN, "bash", "-c", script)
	res := trimOut(raw)
	if n, ok := strings.CutPrefix(res, "moved "); ok && err == nil {
		c.Keys, _ = strconv.Atoi(n)
	} else {
		return c, fmt.Errorf("migrate-slot: %s: %v: %s", srcN.Name, err, res)
	}
	order := []node{dstN, srcN}
	for _, p := range primaries {
		if p.ID != src.ID && p.ID != dst.ID {
			order = append(order, byID[p.ID])
		}
	}
	for _, n := range order {
		if err := setslot(n, "NODE", dst.ID); err != nil {
			return c, fmt.Errorf("migrate-slot: %w", err)
		}
	}
	c.Detail = fmt.Sprintf("slots %d-%d from %s to %s in %s", slot, last, srcN.Name, dstN.Name, f.now().Sub(t0).Round(time.Millisecond))
	return c, nil
}

// quorumMember is one row of `rabbitmq-queues quorum_status --formatter json`.
// Its "Raft State" is a string ("leader", "follower") for a member that
// answered and a list (["nodedown","rabbit@..."]) for one that did not:
// kept raw, so that a down member does not spoil the others' rows.
type quorumMember struct {
	Node  string          `json:"Node Name"`
	State json.RawMessage `json:"Raft State"`
}

// leads reports whether the member is the queue's leader.
func (m quorumMember) leads() bool {
	var s string
	return json.Unmarshal(m.State, &s) == nil && s == "leader"
}

// queueLeader returns the node of nodes leading quorum queue q, asking
// the nodes in turn, except skip (a node that is down).
func (f *failover) queueLeader(ctx context.Context, nodes []node, q, skip string) (node, error) {
	var errs []error
	for _, n := range nodes {
		if n.Name == skip {
			continue
		}
		out, err := f.rt.exec(ctx, "rabbitmq", n, "timeout", "30", "rabbitmq-queues", "-q", "quorum_status", q, "--formatter", "json")
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
			continue
		}
		var members []quorumMember
		if err := json.Unmarshal(out, &members); err != nil {
			errs = append(errs, fmt.Errorf("%s: quorum_status: %w", n.Name, err))
			continue
		}
		for _, m := range members {
			if !m.leads() {
				continue
			}
			// rabbit@<host>[.<domain>]
			_, host, _ := strings.Cut(m.Node, "@")
			host, _, _ = strings.Cut(host, ".")
			for _, l := range nodes {
				if l.Host == host {
					return l, nil
				}
			}
			return node{}, fmt.Errorf("queue %s: leader %s is none of the nodes", q, m.Node)
		}
		errs = append(errs, fmt.Errorf("%s: queue %s has no leader", n.Name, q))
	}
	return node{}, fmt.Errorf("queue %s: no leader found: %w", q, errors.Join(errs...))
}

// KillQueueLeader takes down the RabbitMQ node leading quorum queue q,
// looks every leaderProbe for another node to lead it (Cost.RefusedMS),
// lets the node come back once down has passed (where the runtime starts
// it again by itself, at once) and waits until it runs again.
func (f *failover) KillQueueLeader(ctx context.Context, q string, down time.Duration) (fault.Cost, error) {
	c := fault.Cost{RefusedMS: -1}
	nodes, err := f.rt.nodes(ctx, "rabbitmq")
	if err != nil {
		return c, fmt.Errorf("kill-rabbitmq-leader: %w", err)
	}
	victim, err := f.queueLeader(ctx, nodes, q, "")
	if err != nil {
		return c, fmt.Errorf("kill-rabbitmq-leader: %w", err)
	}
	c.Node = victim.Name
	t0 := f.now()
	release, err := f.rt.down(ctx, "rabbitmq", victim)
	if err != nil {
		return c, fmt.Errorf("kill-rabbitmq-leader: take %s down: %w", victim.Name, err)
	}
	leader := "none"
	for f.now().Sub(t0) < f.takeoverTimeout {
		if l, err := f.queueLeader(ctx, nodes, q, victim.Name); err == nil && l.Name != victim.Name {
			c.RefusedMS, leader = f.now().Sub(t0).Milliseconds(), l.Name
			break
		}
		if f.sleep(ctx, f.leaderProbe) != nil {
			break
		}
	}
	var errs []error
	if c.RefusedMS < 0 {
		errs = append(errs, fmt.Errorf("kill-rabbitmq-leader: no other node led %s within %s", q, f.takeoverTimeout))
	}
	if release != nil {
		if rest := down - f.now().Sub(t0); rest > 0 {
			_ = f.sleep(ctx, rest)
		}
		if err := release(context.WithoutCancel(ctx)); err != nil {
			errs = append(errs, fmt.Errorf("kill-rabbitmq-leader: bring %s back: %w", victim.Name, err))
		}
	}
	if _, err := f.rt.back(ctx, "rabbitmq", victim.Name, victim); err != nil {
		errs = append(errs, fmt.Errorf("kill-rabbitmq-leader: %s: %w", victim.Name, err))
	}
	c.Detail = fmt.Sprintf("new leader %s; %s back after %s", leader, victim.Name, f.now().Sub(t0).Round(time.Second))
	return c, errors.Join(errs...)
}
