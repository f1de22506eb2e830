package container

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/fault"
)

// The Postgres faults of the HA topology, on nodes of the oncepay/patroni
// image (deploy/patroni): every look and action is its oncepay-patroni
// command, run in a node through the runtime's exec.

// patroniMember is one member of Patroni's REST /cluster.
type patroniMember struct {
	Name  string `json:"name"`
	Role  string `json:"role"`  // leader, sync_standby, replica
	State string `json:"state"` // running, streaming, starting, stopped, ...
}

// patroniView returns the cluster's members as the first of nodes (but
// skip) that answers sees them.
func (f *failover) patroniView(ctx context.Context, nodes []node, skip string) ([]patroniMember, error) {
	var errs []error
	for _, n := range nodes {
		if n.Name == skip {
			continue
		}
		out, err := f.rt.exec(ctx, "postgres", n, "oncepay-patroni", "cluster")
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
			continue
		}
		var c struct{ Members []patroniMember }
		if err := json.Unmarshal(out, &c); err != nil {
			errs = append(errs, fmt.Errorf("%s: /cluster: %w", n.Name, err))
			continue
		}
		return c.Members, nil
	}
	return nil, fmt.Errorf("no Patroni node answers: %w", errors.Join(errs...))
}

// withRole returns the name of the member with role that is running ("" if none).
func withRole(ms []patroniMember, role string) string {
	for _, m := range ms {
		if m.Role == role && (m.State == "running" || m.State == "streaming") {
			return m.Name
		}
	}
	return ""
}

func nodeNamed(nodes []node, name string) (node, bool) {
	for _, n := range nodes {
		if n.Name == name {
			return n, true
		}
	}
	return node{}, false
}

// pgRole is what node n's Postgres is: primary, replica, or down (also
// when the node does not answer).
func (f *failover) pgRole(ctx context.Context, n node) string {
	out, err := f.rt.exec(ctx, "postgres", n, "oncepay-patroni", "role")
	if err != nil {
		return "down"
	}
	return trimOut(out)
}

// pgCluster finds the nodes, the leader and its synchronous standby.
func (f *failover) pgCluster(ctx context.Context) (nodes []node, leader, sync node, err error) {
	nodes, err = f.rt.nodes(ctx, "postgres")
	if err != nil {
		return nil, node{}, node{}, err
	}
	ms, err := f.patroniView(ctx, nodes, "")
	if err != nil {
		return nil, node{}, node{}, err
	}
	l, ok := nodeNamed(nodes, withRole(ms, "leader"))
	if !ok {
		return nil, node{}, node{}, fmt.Errorf("no running leader among %d nodes: %+v", len(nodes), ms)
	}
	s, _ := nodeNamed(nodes, withRole(ms, "sync_standby"))
	return nodes, l, s, nil
}

// pgTakeover probes every pgProbe until another node than victim leads
// the cluster out of recovery (c.PromotedMS), then until a write through
// every node's address with target_session_attrs=read-write commits, as
// the services connect (c.RefusedMS), for at most within from t0. With
// demoted set it also looks at victim until its Postgres is no primary
// (c.DemotedMS). It returns the new leader's name ("" if none).
func (f *failover) pgTakeover(ctx context.Context, nodes []node, victim node, t0 time.Time, within time.Duration, c *fault.Cost, demoted bool) string {
	var hosts []string
	var via node
	for _, n := range nodes {
		hosts = append(hosts, n.Host)
		if n.Name != victim.Name && via.Name == "" {
			via = n
		}
	}
	leader := ""
	for f.now().Sub(t0) < within {
		if demoted && c.DemotedMS < 0 && f.pgRole(ctx, victim) != "primary" {
			c.DemotedMS = f.now().Sub(t0).Milliseconds()
		}
		if c.PromotedMS < 0 {
			if ms, err := f.patroniView(ctx, nodes, victim.Name); err == nil {
				if l, ok := nodeNamed(nodes, withRole(ms, "leader")); ok && l.Name != victim.Name && f.pgRole(ctx, l) == "primary" {
					c.PromotedMS, leader = f.now().Sub(t0).Milliseconds(), l.Name
				}
			}
		}
		if c.PromotedMS >= 0 && c.RefusedMS < 0 {
			if _, err := f.rt.exec(ctx, "postgres", via, "oncepay-patroni", "write", strings.Join(hosts, ",")); err == nil {
				c.RefusedMS = f.now().Sub(t0).Milliseconds()
			}
		}
		if c.PromotedMS >= 0 && c.RefusedMS >= 0 && (!demoted || c.DemotedMS >= 0) {
			break
		}
		if f.sleep(ctx, f.pgProbe) != nil {
			break
		}
	}
	return leader
}

// pgRejoin waits, at most backTimeout, until the node old runs again (the
// runtime's back) as a replica that streams from leader; an error says
// what it was instead.
func (f *failover) pgRejoin(ctx context.Context, old node, leader string) error {
	back, err := f.rt.back(ctx, "postgres", old.Name, old)
	if err != nil {
		return err
	}
	nodes, err := f.rt.nodes(ctx, "postgres")
	if err != nil {
		return err
	}
	l, ok := nodeNamed(nodes, leader)
	if !ok {
		return fmt.Errorf("the new leader %q is not running", leader)
	}
	role := "?"
	for start := f.now(); f.now().Sub(start) < f.backTimeout; {
		role = f.pgRole(ctx, back)
		if role == "replica" {
			if _, err := f.rt.exec(ctx, "postgres", l, "oncepay-patroni", "streams", back.Name); err == nil {
				return nil
			}
		}
		if f.sleep(ctx, time.Second) != nil {
			break
		}
	}
	return fmt.Errorf("not a replica streaming from %s within %s (its Postgres: %s)", leader, f.backTimeout, role)
}

// FailoverPostgres takes the leader down the way a lost host goes (the
// runtime's down: its Patroni and Postgres killed), measures until the
// synchronous standby is a primary and writes commit, lets the node come
// back and waits until it streams from the new leader. A lag (the
// replication stream dropped first) needs the local runtime's proxies.
func (f *failover) FailoverPostgres(ctx context.Context, lag time.Duration) (fault.Cost, error) {
	c := fault.Cost{RefusedMS: -1, PromotedMS: -1}
	if lag > 0 {
		return c, fmt.Errorf("%w: failover-postgres with a replication lag needs the local runtime", fault.ErrUnsupported)
	}
	nodes, victim, sync, err := f.pgCluster(ctx)
	if err != nil {
		return c, fmt.Errorf("failover-postgres: %w", err)
	}
	c.Node = victim.Name
	t0 := f.now()
	release, err := f.rt.down(ctx, "postgres", victim)
	if err != nil {
		return c, fmt.Errorf("failover-postgres: take %s down: %w", victim.Name, err)
	}
	leader := f.pgTakeover(ctx, nodes, victim, t0, f.takeoverTimeout, &c, false)
	var errs []error
	if c.PromotedMS < 0 || c.RefusedMS < 0 {
		errs = append(errs, fmt.Errorf("failover-postgres: no new primary taking writes within %s", f.takeoverTimeout))
	}
	if release != nil {
		if err := release(context.WithoutCancel(ctx)); err != nil {
			errs = append(errs, fmt.Errorf("failover-postgres: bring %s back: %w", victim.Name, err))
		}
	}
	rejoined := "no"
	if leader != "" {
		if err := f.pgRejoin(ctx, victim, leader); err != nil {
			errs = append(errs, fmt.Errorf("failover-postgres: %s: %w", victim.Name, err))
		} else {
			rejoined = "yes"
		}
	}
	c.Detail = fmt.Sprintf("new primary %s (the sync standby was %s); %s rejoined as a replica: %s, after %s",
		cmp.Or(leader, "none"), cmp.Or(sync.Name, "none"), victim.Name, rejoined, f.now().Sub(t0).Round(time.Second))
	return c, errors.Join(errs...)
}

// SwitchoverPostgres asks the leader's Patroni for a switchover to the
// synchronous standby, measures until that one is a primary and writes
// commit, and waits until the old leader streams from it.
func (f *failover) SwitchoverPostgres(ctx context.Context) (fault.Cost, error) {
	c := fault.Cost{RefusedMS: -1, PromotedMS: -1}
	nodes, victim, sync, err := f.pgCluster(ctx)
	if err != nil {
		return c, fmt.Errorf("switchover-postgres: %w", err)
	}
	if sync.Name == "" {
		return c, errors.New("switchover-postgres: the cluster has no synchronous standby")
	}
	c.Node = victim.Name
	t0 := f.now()
	if out, err := f.rt.exec(ctx, "postgres", victim, "oncepay-patroni", "switchover", victim.Name, sync.Name); err != nil {
		return c, fmt.Errorf("switchover-postgres: %s to %s: %w: %s", victim.Name, sync.Name, err, trimOut(out))
	}
	leader := f.pgTakeover(ctx, nodes, victim, t0, f.takeoverTimeout, &c, false)
	var errs []error
	if c.PromotedMS < 0 || c.RefusedMS < 0 {
		errs = append(errs, fmt.Errorf("switchover-postgres: no new primary taking writes within %s", f.takeoverTimeout))
	}
	rejoined := "no"
	if leader != "" {
		if err := f.pgRejoin(ctx, victim, leader); err != nil {
			errs = append(errs, fmt.Errorf("switchover-postgres: %s: %w", victim.Name, err))
		} else {
			rejoined = "yes"
		}
	}
	c.Detail = fmt.Sprintf("new primary %s; %s rejoined as a replica: %s, after %s",
		cmp.Or(leader, "none"), victim.Name, rejoined, f.now().Sub(t0).Round(time.Second))
	return c, errors.Join(errs...)
}

// partitionPostgres cuts the leader off with cut for dur (from the store,
// the other nodes and the clients: its Postgres keeps running), measures
// within dur until it is no primary any more (c.DemotedMS) and until
// another node is one taking writes, heals it with the function cut
// returned and waits until it streams from the new leader. A leader
// still primary when the cut heals is an error: once reachable again it
// would be a second primary.
func (f *failover) partitionPostgres(ctx context.Context, dur time.Duration,
	cut func(ctx context.Context, victim node) (heal func(context.Context) error, err error)) (fault.Cost, error) {
	c := fault.Cost{RefusedMS: -1, PromotedMS: -1, DemotedMS: -1}
	nodes, victim, _, err := f.pgCluster(ctx)
	if err != nil {
		return c, fmt.Errorf("partition-postgres: %w", err)
	}
	c.Node = victim.Name
	t0 := f.now()
	heal, err := cut(ctx, victim)
	if err != nil {
		return c, fmt.Errorf("partition-postgres: %s: %w", victim.Name, err)
	}
	leader := f.pgTakeover(ctx, nodes, victim, t0, dur, &c, true)
	var errs []error
	if c.DemotedMS < 0 {
		errs = append(errs, fmt.Errorf("partition-postgres: %s still a primary %s after the cut, at the heal", victim.Name, f.now().Sub(t0).Round(time.Second)))
	}
	if c.PromotedMS < 0 || c.RefusedMS < 0 {
		errs = append(errs, fmt.Errorf("partition-postgres: no new primary taking writes within the %s cut", dur))
	}
	if rest := dur - f.now().Sub(t0); rest > 0 {
		_ = f.sleep(ctx, rest)
	}
	if err := heal(context.WithoutCancel(ctx)); err != nil {
		errs = append(errs, fmt.Errorf("partition-postgres: heal %s: %w", victim.Name, err))
	}
	rejoined := "no"
	if leader != "" {
		if err := f.pgRejoin(ctx, victim, leader); err != nil {
			errs = append(errs, fmt.Errorf("partition-postgres: %s: %w", victim.Name, err))
		} else {
			rejoined = "yes"
		}
	}
	c.Detail = fmt.Sprintf("cut off for %s; new primary %s; %s rejoined as a replica: %s, after %s",
		dur, cmp.Or(leader, "none"), victim.Name, rejoined, f.now().Sub(t0).Round(time.Second))
	return c, errors.Join(errs...)
}

// FailoverPostgres docker-kills the Patroni leader's container (Patroni
// and Postgres with it: a lost host) and starts it again once another
// node is the primary (see failover.FailoverPostgres).
func (d *Docker) FailoverPostgres(ctx context.Context, lag time.Duration) (fault.Cost, error) {
	return newFailover(dockerNodes{d}).FailoverPostgres(ctx, lag)
}

// SwitchoverPostgres hands the primary over to the synchronous standby
// through the leader's Patroni (see failover.SwitchoverPostgres).
func (d *Docker) SwitchoverPostgres(ctx context.Context) (fault.Cost, error) {
	return newFailover(dockerNodes{d}).SwitchoverPostgres(ctx)
}

// PartitionPostgres disconnects the Patroni leader's container from every
// network for dur (cut from etcd, the other nodes and the clients, its
// Postgres running): its Patroni must demote it once it cannot renew the
// leader key. Then it connects it again with its aliases and waits until
// it streams from the new leader.
func (d *Docker) PartitionPostgres(ctx context.Context, dur time.Duration) (fault.Cost, error) {
	return newFailover(dockerNodes{d}).partitionPostgres(ctx, dur, d.disconnect)
}

var _ fault.PostgresFailoverer = (*Docker)(nil)
