package container

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oncepay/oncepay/internal/proc"
	"github.com/oncepay/oncepay/loadtest/fault"
)

// mainPrograms are the executables each state service's main process may
// run: Debian's redis-server (the lab's redis:7 stand-in) is a link to
// redis-check-rdb, which dispatches on its name.
var mainPrograms = map[string][]string{"redis": {"redis-server", "redis-check-rdb"}, "rabbitmq": {"beam.smp"}}

// statePID returns the host pid of a state pod's server: the oldest
// process running one of programs in the pod. A RabbitMQ pod also runs
// short-lived CLI VMs (probes, the postStart hook), beam.smp as well.
func statePID(p pod, programs []string) (int, error) {
	uid := p.Metadata.UID
	var pids []int
	for _, program := range programs {
		found, err := pidsInCgroup("/proc", program, "pod"+uid, "pod"+strings.ReplaceAll(uid, "-", "_"))
		if err != nil {
			return 0, err
		}
		pids = append(pids, found...)
	}
	if len(pids) == 0 {
		return 0, fmt.Errorf("pod %s: no %s process visible in /proc (is the driver on the node's host, as root?): %w",
			p.Metadata.Name, strings.Join(programs, " or "), ErrNotRunning)
	}
	return oldest("/proc", pids), nil
}

// oldest returns the pid of pids that started first (field 22 of
// /proc/<pid>/stat, in clock ticks since boot).
func oldest(procRoot string, pids []int) int {
	best, bestStart := pids[0], uint64(math.MaxUint64)
	for _, pid := range pids {
		b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // fields 3...
		if len(f) < 20 {
			continue
		}
		if start, err := strconv.ParseUint(f[19], 10, 64); err == nil && start < bestStart {
			best, bestStart = pid, start
		}
	}
	return best
}

// --- Kube ------------------------------------------------------------------

// kubeNodes reaches the release's StatefulSet pods: <release>-redis-0 ...
type kubeNodes struct{ k *Kube }

func (n kubeNodes) nodes(ctx context.Context, service string) ([]node, error) {
	pods, err := n.k.pods(ctx, service)
	if err != nil {
		return nil, err
	}
	out := make([]node, 0, len(pods))
	for _, p := range pods {
		out = append(out, node{Name: strings.TrimPrefix(p.Metadata.Name, n.k.cfg.Release+"-"),
			Host: p.Metadata.Name, Ref: p.Metadata.Name, UID: p.Metadata.UID})
	}
	return out, nil
}

func (n kubeNodes) exec(ctx context.Context, service string, nd node, argv ...string) ([]byte, error) {
	return n.k.run(ctx, append([]string{"exec", nd.Ref, "-c", service, "--"}, argv...)...)
}

// down: with host access (KillMode sigkill, sigkill-delete), a Redis node's
// process is frozen (SIGSTOP) until release SIGKILLs it and deletes its pod:
// a deleted pod is back under its name within seconds, before the cluster
// counts its primary as failed (cluster-node-timeout), so a kill alone
// would be a restart, not a failover. A frozen process acknowledges
// nothing more, as a killed one; its clients time out instead of being
// refused. A RabbitMQ node is SIGKILLed and its pod deleted at once: its
// queues elect new leaders before the new pod has booted. With KillDelete
// (no host access) the pod is only deleted, with no grace.
func (n kubeNodes) down(ctx context.Context, service string, nd node) (func(context.Context) error, error) {
	del := func(ctx context.Context) error {
		_, err := n.k.run(ctx, "delete", "pod", nd.Ref, "--grace-period=0", "--force", "--wait=false")
		return err
	}
	if n.k.cfg.KillMode == KillDelete {
		return nil, del(ctx)
	}
	p := pod{}
	p.Metadata.Name, p.Metadata.UID = nd.Ref, nd.UID
	pid, err := n.k.statePID(p, mainPrograms[service])
	if err != nil {
		return nil, err
	}
	if service == "redis" {
		if err := n.k.freeze(pid, time.Second); err != nil {
			return nil, err
		}
		return func(ctx context.Context) error {
			if err := n.k.kill(pid, 3*time.Second); err != nil && !errors.Is(err, ErrNotRunning) {
				_ = proc.Thaw(pid)
				return err
			}
			return del(ctx)
		}, nil
	}
	if err := n.k.kill(pid, 3*time.Second); err != nil && !errors.Is(err, ErrNotRunning) {
		return nil, err
	}
	return nil, del(ctx)
}

func (n kubeNodes) back(ctx context.Context, service, name string, old node) (node, error) {
	p := pod{}
	p.Metadata.Name, p.Metadata.UID = old.Ref, old.UID
	np, err := n.k.newPod(ctx, service, p)
	if err != nil {
		return node{}, err
	}
	return node{Name: name, Host: np.Metadata.Name, Ref: np.Metadata.Name, UID: np.Metadata.UID}, nil
}

// FailoverRedis fails the Redis Cluster primary of a slot in use over
// (see failover.FailoverRedis and kubeNodes.down).
func (k *Kube) FailoverRedis(ctx context.Context) (fault.Cost, error) {
	return newFailover(kubeNodes{k}).FailoverRedis(ctx)
}

// MigrateSlot moves a block of slots in use to another primary (see
// failover.MigrateSlot).
func (k *Kube) MigrateSlot(ctx context.Context) (fault.Cost, error) {
	return newFailover(kubeNodes{k}).MigrateSlot(ctx)
}

// KillQueueLeader kills the RabbitMQ pod leading queue; the StatefulSet
// starts it again at once, so down is not kept.
func (k *Kube) KillQueueLeader(ctx context.Context, queue string, down time.Duration) (fault.Cost, error) {
	return newFailover(kubeNodes{k}).KillQueueLeader(ctx, queue, down)
}

// PartitionQueueLeader cuts the RabbitMQ pod leading queue off from its
// peers and from the clients for d: with host access (every KillMode but
// KillDelete) it enters the pod's network namespace through its server's
// pid and drops every packet that is not on loopback, both ways, connections
// kept open (iptables, as a cable pulled); then it deletes the two rules and
// waits until the pod is ready again. The pod is not restarted: kubectl exec
// still reaches it, the readiness probe fails meanwhile. Cost.RefusedMS is
// how long until another node led queue (-1: none did while it was cut off).
func (k *Kube) PartitionQueueLeader(ctx context.Context, queue string, d time.Duration) (fault.Cost, error) {
	return k.partitionQueueLeader(ctx, newFailover(kubeNodes{k}), queue, d)
}

// dropAll are the iptables rules that cut a network namespace off from
// everything but its loopback.
var dropAll = [][]string{{"INPUT", "!", "-i", "lo", "-j", "DROP"}, {"OUTPUT", "!", "-o", "lo", "-j", "DROP"}}

func (k *Kube) partitionQueueLeader(ctx context.Context, f *failover, queue string, d time.Duration) (fault.Cost, error) {
	if k.cfg.KillMode == KillDelete {
		return fault.Cost{RefusedMS: -1}, fmt.Errorf("%w: partition-rabbitmq on kind needs host access (KillMode %s)", fault.ErrUnsupported, k.cfg.KillMode)
	}
	return f.partitionQueueLeader(ctx, queue, d, func(ctx context.Context, victim node) (func(context.Context) error, error) {
		p := pod{}
		p.Metadata.Name, p.Metadata.UID = victim.Ref, victim.UID
		pid, err := k.statePID(p, mainPrograms["rabbitmq"])
		if err != nil {
			return nil, err
		}
		var added [][]string
		heal := func(ctx context.Context) error {
			var errs []error
			for _, r := range added {
				if err := k.iptables(ctx, pid, append([]string{"-D"}, r...)...); err != nil {
					errs = append(errs, fmt.Errorf("heal: %w", err))
				}
			}
			if len(errs) == 0 {
				errs = append(errs, k.ready(ctx, "rabbitmq", victim.Ref))
			}
			return errors.Join(errs...)
		}
		for _, r := range dropAll {
			if err := k.iptables(ctx, pid, append([]string{"-I", r[0], "1"}, r[1:]...)...); err != nil {
				return nil, errors.Join(err, heal(context.WithoutCancel(ctx)))
			}
			added = append(added, r)
		}
		return heal, nil
	})
}

// ready waits, at most ReadyTimeout, until the component's pod name is
// ready.
func (k *Kube) ready(ctx context.Context, component, name string) error {
	ctx, cancel := context.WithTimeout(ctx, k.cfg.ReadyTimeout)
	defer cancel()
	for {
		pods, err := k.pods(ctx, component)
		for _, p := range pods {
			if p.Metadata.Name == name && p.ready() {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod %s not ready after %s (%v)", name, k.cfg.ReadyTimeout, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// --- Docker ----------------------------------------------------------------

// dockerNodes reaches the compose project's containers: redis, redis-2 ...
type dockerNodes struct{ d *Docker }

func (n dockerNodes) nodes(ctx context.Context, service string) ([]node, error) {
	out, err := n.d.run(ctx, "ps", "--no-trunc", "--format", `{{.ID}} {{.Label "com.docker.compose.service"}}`,
		"--filter", "label=com.docker.compose.project="+n.d.cfg.Project)
	if err != nil {
		return nil, err
	}
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(service) + `(-\d+)?$`)
	var nodes []node
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, svc, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && re.MatchString(svc) {
			nodes = append(nodes, node{Name: svc, Host: svc, Ref: id})
		}
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("compose project %s: no %s container running: %w", n.d.cfg.Project, service, ErrNotRunning)
	}
	return nodes, nil
}

func (n dockerNodes) exec(ctx context.Context, service string, nd node, argv ...string) ([]byte, error) {
	return n.d.run(ctx, append([]string{"exec", nd.Ref}, argv...)...)
}

// down: docker kill (SIGKILL). Docker counts it as a stop, so the restart
// policy leaves the container down until release starts it.
func (n dockerNodes) down(ctx context.Context, service string, nd node) (func(context.Context) error, error) {
	if _, err := n.d.run(ctx, "kill", nd.Ref); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		_, err := n.d.run(ctx, "start", nd.Ref)
		return err
	}, nil
}

func (n dockerNodes) back(ctx context.Context, service, name string, old node) (node, error) {
	return old, n.d.healthy(ctx, old.Ref)
}

// FailoverRedis fails the Redis Cluster primary of a slot in use over
// (see failover.FailoverRedis): docker kill, docker start once its replica
// took over.
func (d *Docker) FailoverRedis(ctx context.Context) (fault.Cost, error) {
	return newFailover(dockerNodes{d}).FailoverRedis(ctx)
}

// MigrateSlot moves a block of slots in use to another primary (see
// failover.MigrateSlot).
func (d *Docker) MigrateSlot(ctx context.Context) (fault.Cost, error) {
	return newFailover(dockerNodes{d}).MigrateSlot(ctx)
}

// KillQueueLeader docker-kills the RabbitMQ container leading queue and
// starts it again after down.
func (d *Docker) KillQueueLeader(ctx context.Context, queue string, down time.Duration) (fault.Cost, error) {
	return newFailover(dockerNodes{d}).KillQueueLeader(ctx, queue, down)
}

// PartitionQueueLeader cuts the RabbitMQ container leading queue off
// from its peers and from the clients for dur: `docker network disconnect`
// from every network it is on, then `docker network connect` again with
// the aliases it had (the compose service and host names the other nodes
// and the clients dial). Cost.RefusedMS is how long until another node led
// queue (-1: none did while it was cut off); it waits until the node is
// healthy again.
func (d *Docker) PartitionQueueLeader(ctx context.Context, queue string, dur time.Duration) (fault.Cost, error) {
	return d.partitionQueueLeader(ctx, newFailover(dockerNodes{d}), queue, dur)
}

func (d *Docker) partitionQueueLeader(ctx context.Context, f *failover, queue string, dur time.Duration) (fault.Cost, error) {
	return f.partitionQueueLeader(ctx, queue, dur, d.disconnect)
}

// disconnect cuts a node's container off from every network it is on
// (`docker network disconnect`) and returns how to heal it: `docker
// network connect` again with the aliases it had (the compose service and
// host names the other nodes and the clients dial), then a wait until it
// is healthy. On an error it leaves the container as it was.
func (d *Docker) disconnect(ctx context.Context, victim node) (func(context.Context) error, error) {
	nets, err := d.networks(ctx, victim.Ref)
	if err != nil {
		return nil, err
	}
	var cut []containerNet
	heal := func(ctx context.Context) error {
		var errs []error
		for _, n := range cut {
			args := []string{"network", "connect"}
			for _, a := range n.Aliases {
				args = append(args, "--alias", a)
			}
			if _, err := d.run(ctx, append(args, n.Name, victim.Ref)...); err != nil {
				errs = append(errs, fmt.Errorf("heal: %w", err))
			}
		}
		return errors.Join(append(errs, d.healthy(ctx, victim.Ref))...)
	}
	for _, n := range nets {
		if _, err := d.run(ctx, "network", "disconnect", n.Name, victim.Ref); err != nil {
			return nil, errors.Join(err, heal(context.WithoutCancel(ctx)))
		}
		cut = append(cut, n)
	}
	return heal, nil
}

// partitionQueueLeader cuts the node leading queue off with cut for dur,
// looking meanwhile for another node to lead it, then heals it with the
// function cut returned (which returns once the node serves again). cut
// either cuts the node off and returns its heal, or returns an error with
// the node as it was.
func (f *failover) partitionQueueLeader(ctx context.Context, queue string, dur time.Duration,
	cut func(ctx context.Context, victim node) (heal func(context.Context) error, err error)) (fault.Cost, error) {
	c := fault.Cost{RefusedMS: -1}
	nodes, err := f.rt.nodes(ctx, "rabbitmq")
	if err != nil {
		return c, fmt.Errorf("partition-rabbitmq: %w", err)
	}
	victim, err := f.queueLeader(ctx, nodes, queue, "")
	if err != nil {
		return c, fmt.Errorf("partition-rabbitmq: %w", err)
	}
	c.Node = victim.Name
	t0 := f.now()
	heal, err := cut(ctx, victim)
	if err != nil {
		return c, fmt.Errorf("partition-rabbitmq: %s: %w", victim.Name, err)
	}
	leader := "none"
	for f.now().Sub(t0) < dur {
		if l, err := f.queueLeader(ctx, nodes, queue, victim.Name); err == nil && l.Name != victim.Name {
			c.RefusedMS, leader = f.now().Sub(t0).Milliseconds(), l.Name
			break
		}
		if f.sleep(ctx, f.leaderProbe) != nil {
			break
		}
	}
	if rest := dur - f.now().Sub(t0); rest > 0 {
		_ = f.sleep(ctx, rest)
	}
	err = heal(context.WithoutCancel(ctx))
	if err != nil {
		err = fmt.Errorf("partition-rabbitmq: %s: %w", victim.Name, err)
	}
	c.Detail = fmt.Sprintf("cut off for %s; new leader %s; %s back after %s", dur, leader, victim.Name, f.now().Sub(t0).Round(time.Second))
	return c, err
}

// containerNet is one network a container is on, with its aliases there.
type containerNet struct {
	Name    string
	Aliases []string
}

// networks lists the networks of container id with the aliases it has on
// each (the container's own id prefix, which docker adds on every
// connect, left out).
func (d *Docker) networks(ctx context.Context, id string) ([]containerNet, error) {
	out, err := d.run(ctx, "inspect", "-f", "{{json .NetworkSettings.Networks}}", id)
	if err != nil {
		return nil, err
	}
	var m map[string]struct{ Aliases []string }
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, fmt.Errorf("its networks: %w", err)
	}
	var nets []containerNet
	for _, name := range slices.Sorted(maps.Keys(m)) {
		n := containerNet{Name: name}
		for _, a := range m[name].Aliases {
			if !strings.HasPrefix(id, a) {
				n.Aliases = append(n.Aliases, a)
			}
		}
		nets = append(nets, n)
	}
	if len(nets) == 0 {
		return nil, errors.New("on no network")
	}
	return nets, nil
}

var (
	_ fault.Failoverer = (*Kube)(nil)
	_ fault.Failoverer = (*Docker)(nil)
)
