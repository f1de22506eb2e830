package container

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
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

// PartitionQueueLeader is not implemented on Kubernetes.
func (k *Kube) PartitionQueueLeader(ctx context.Context, queue string, d time.Duration) (fault.Cost, error) {
	return fault.Cost{RefusedMS: -1}, fmt.Errorf("%w: partition-rabbitmq on kind", fault.ErrUnsupported)
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

// PartitionQueueLeader is not implemented on Compose.
func (d *Docker) PartitionQueueLeader(ctx context.Context, queue string, dur time.Duration) (fault.Cost, error) {
	return fault.Cost{RefusedMS: -1}, fmt.Errorf("%w: partition-rabbitmq on compose", fault.ErrUnsupported)
}

var (
	_ fault.Failoverer = (*Kube)(nil)
	_ fault.Failoverer = (*Docker)(nil)
)
