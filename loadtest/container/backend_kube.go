package container

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oncepay/oncepay/internal/proc"
	"github.com/oncepay/oncepay/pkg/service/dial"
	"github.com/redis/go-redis/v9"

	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/process"
)

// KillMode is how Kube kills a replica.
type KillMode string

const (
	// KillSIGKILL sends SIGKILL to the pod's main process from the host of
	// the node (kind: the machine running the node containers). The kubelet
	// restarts the container in place, as after a crash or an OOM kill. The
	// kubelet backs off repeated restarts of one container (10 s, 20 s, ...).
	KillSIGKILL KillMode = "sigkill"
	// KillDelete deletes the pod with --grace-period=0 --force; the
	// Deployment creates a new one. Works wherever kubectl works, but the
	// kubelet still sends SIGTERM and waits about 2 s before SIGKILL, so the
	// replica gets a short drain.
	KillDelete KillMode = "delete"
	// KillSIGKILLDelete sends SIGKILL to the pod's main process from the
	// host, as KillSIGKILL does (a crash, mid-request), and then deletes the
	// pod with --grace-period=0 --force, so that the Deployment starts a
	// fresh pod at once instead of the kubelet restarting the container in
	// place. Repeated in-place restarts of one container meet the kubelet's
	// CrashLoopBackOff (10 s, 20 s, 40 s, ... up to 5 min, reset only after
	// 10 min of running), which a fault test that kills the same two
	// replicas every few seconds, run after run, turns into long outages of
	// every replica at once. A new pod has no back-off.
	KillSIGKILLDelete KillMode = "sigkill-delete"
)

// KubeConfig describes a Helm release of deploy/helm/oncepay.
type KubeConfig struct {
	Kubectl   string // kubectl binary (default "kubectl")
	Context   string // kubeconfig context, e.g. kind-oncepay; empty: the current one
	Namespace string // default oncepay
	Release   string // Helm release name, default oncepay
	// Replicas by runtime-neutral name: api-1 is the first running pod of
	// component api in name order, api-2 the second, and so on. Ports are the
	// containers' own: api ServerPort 8080, worker UpstreamPort 8090.
	Replicas map[string]process.Replica
	Redis    redis.UniversalClient // the release's Redis (NodePort 30379 on kind), for FlushRedis
	KillMode KillMode              // default KillSIGKILL
	// ReadyTimeout bounds RestartService's wait for the new pod (default 3m).
	ReadyTimeout time.Duration
	// PSP, if set, is the psp's admin API: the psp fault kinds go through it.
	PSP *fault.PSPAdmin
}

// Kube is the fault backend for oncepay on Kubernetes. It implements
// fault.Backend and fault.Prober and is safe for concurrent use.
type Kube struct {
	fault.PSPFaults // psp-outage, reject-psp (KubeConfig.PSP)
	cfg             KubeConfig
	run             func(ctx context.Context, args ...string) ([]byte, error)
	pids            pidCache
	// the host's view of a pod's processes (tests replace them)
	statePID func(p pod, programs []string) (int, error)
	freeze   func(pid int, wait time.Duration) error
	kill     func(pid int, wait time.Duration) error
	iptables func(ctx context.Context, pid int, args ...string) error // in pid's network namespace
}

// NewKube returns a backend for the release in cfg.
func NewKube(cfg KubeConfig) *Kube {
	if cfg.Kubectl == "" {
		cfg.Kubectl = "kubectl"
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "oncepay"
	}
	if cfg.Release == "" {
		cfg.Release = "oncepay"
	}
	if cfg.KillMode == "" {
		cfg.KillMode = KillSIGKILL
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 3 * time.Minute
	}
	k := &Kube{PSPFaults: fault.PSPFaults{PSP: cfg.PSP}, cfg: cfg, statePID: statePID, freeze: proc.Freeze, kill: sigkill, iptables: nsIPTables}
	k.run = func(ctx context.Context, args ...string) ([]byte, error) {
		full := []string{"-n", k.cfg.Namespace}
		if k.cfg.Context != "" {
			full = append(full, "--context", k.cfg.Context)
		}
		full = append(full, args...)
		out, err := exec.CommandContext(ctx, k.cfg.Kubectl, full...).Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out, fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return out, err
	}
	return k
}

// nsIPTables runs iptables (-w: waiting for the xtables lock) in the
// network namespace of pid, with nsenter from the node's host, as root.
func nsIPTables(ctx context.Context, pid int, args ...string) error {
	argv := append([]string{"-t", strconv.Itoa(pid), "-n", "--", "iptables", "-w"}, args...)
	if out, err := exec.CommandContext(ctx, "nsenter", argv...).CombinedOutput(); err != nil {
		return fmt.Errorf("nsenter %s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// pod is the part of a Pod the backend reads.
type pod struct {
	Metadata struct {
		Name              string  `json:"name"`
		UID               string  `json:"uid"`
		DeletionTimestamp *string `json:"deletionTimestamp"`
	} `json:"metadata"`
	Status struct {
		Phase      string `json:"phase"`
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

func (p pod) ready() bool {
	for _, c := range p.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

// pods lists the running, not terminating pods of a component, by name.
func (k *Kube) pods(ctx context.Context, component string) ([]pod, error) {
	out, err := k.run(ctx, "get", "pods", "-o", "json", "-l",
		"app.kubernetes.io/instance="+k.cfg.Release+",app.kubernetes.io/component="+component)
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []pod `json:"items"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("kubectl get pods: %w", err)
	}
	var running []pod
	for _, p := range list.Items {
		if p.Status.Phase == "Running" && p.Metadata.DeletionTimestamp == nil {
			running = append(running, p)
		}
	}
	slices.SortFunc(running, func(a, b pod) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	return running, nil
}

var replicaIndex = regexp.MustCompile(`-(\d+)$`)

// replicaPod maps api-2 to the second running api pod.
func (k *Kube) replicaPod(ctx context.Context, name string) (process.Replica, pod, error) {
	r, ok := k.cfg.Replicas[name]
	if !ok {
		return r, pod{}, fmt.Errorf("unknown replica %q", name)
	}
	m := replicaIndex.FindStringSubmatch(name)
	if m == nil {
		return r, pod{}, fmt.Errorf("replica %q: want a name ending in -N", name)
	}
	i, _ := strconv.Atoi(m[1])
	pods, err := k.pods(ctx, r.Program)
	if err != nil {
		return r, pod{}, err
	}
	if i < 1 || i > len(pods) {
		return r, pod{}, fmt.Errorf("replica %s: %d %s pods running: %w", name, len(pods), r.Program, ErrNotRunning)
	}
	return r, pods[i-1], nil
}

// hostPID finds the host pid of the pod's main process through its cgroup
// (the pod uid is in the cgroup path, with - or _).
func hostPID(p pod, program string) (int, error) {
	uid := p.Metadata.UID
	pids, err := pidsInCgroup("/proc", program, "pod"+uid, "pod"+strings.ReplaceAll(uid, "-", "_"))
	if err != nil {
		return 0, err
	}
	switch len(pids) {
	case 0:
		return 0, fmt.Errorf("pod %s: no %s process visible in /proc (is the driver on the node's host, as root?): %w", p.Metadata.Name, program, ErrNotRunning)
	case 1:
		return pids[0], nil
	}
	return 0, fmt.Errorf("pod %s: %d %s processes %v", p.Metadata.Name, len(pids), program, pids)
}

// replicaPID returns the host pid of the replica's main process and the
// name of its pod.
func (k *Kube) replicaPID(ctx context.Context, name string) (process.Replica, int, string, error) {
	r, ok := k.cfg.Replicas[name]
	if ok {
		if pid, pod, ok := k.pids.get(name, r.Program); ok {
			return r, pid, pod, nil
		}
	}
	r, p, err := k.replicaPod(ctx, name)
	if err != nil {
		return r, 0, "", err
	}
	pid, err := hostPID(p, r.Program)
	if err != nil {
		return r, 0, "", err
	}
	k.pids.put(name, pid, p.Metadata.Name)
	return r, pid, p.Metadata.Name, nil
}

// forget drops the cached pids of every replica of program: after a pod
// of it is deleted, the replica names (pods in name order) may shift.
func (k *Kube) forget(program string) {
	var names []string
	for name, r := range k.cfg.Replicas {
		if r.Program == program {
			names = append(names, name)
		}
	}
	k.pids.drop(names...)
}

// deletePod deletes a pod at once (--grace-period=0 --force); its
// Deployment creates a new one.
func (k *Kube) deletePod(ctx context.Context, program, pod string) error {
	k.forget(program)
	_, err := k.run(ctx, "delete", "pod", pod, "--grace-period=0", "--force", "--wait=false")
	return err
}

// KillReplica kills the replica's pod as KillMode says and returns the host
// pid it killed (0 for KillDelete).
func (k *Kube) KillReplica(ctx context.Context, name string) (int, error) {
	if k.cfg.KillMode == KillDelete {
		r, p, err := k.replicaPod(ctx, name)
		if err != nil {
			return 0, fmt.Errorf("kill %s: %w", name, err)
		}
		if err := k.deletePod(ctx, r.Program, p.Metadata.Name); err != nil {
			return 0, fmt.Errorf("kill %s: %w", name, err)
		}
		return 0, nil
	}
	// the pid InFlight just looked at (cached), killed at once: a lookup
	// through kubectl first would give the requests in flight time to end
	r, pid, pod, err := k.replicaPID(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("kill %s: %w", name, err)
	}
	if err := sigkill(pid, 3*time.Second); err != nil {
		return pid, fmt.Errorf("kill %s: %w", name, err)
	}
	if k.cfg.KillMode == KillSIGKILLDelete {
		if err := k.deletePod(ctx, r.Program, pod); err != nil {
			return pid, fmt.Errorf("kill %s: pid %d killed, but deleting pod %s failed: %w", name, pid, pod, err)
		}
	}
	return pid, nil
}

// RestartService deletes the pods of redis or rabbitmq one at a time (a
// graceful stop; the StatefulSet starts each again under its name, on its
// volume) and returns once the last new pod is ready. With one pod (the
// single topology) that is a restart of the service; with a cluster's
// nodes (ha) a rolling restart.
func (k *Kube) RestartService(ctx context.Context, service string) error {
	switch service {
	case "redis", "rabbitmq":
	default:
		return fmt.Errorf("restart %q: only redis and rabbitmq can be restarted", service)
	}
	before, err := k.pods(ctx, service)
	if err != nil {
		return fmt.Errorf("restart %s: %w", service, err)
	}
	if len(before) == 0 {
		return fmt.Errorf("restart %s: no pod running: %w", service, ErrNotRunning)
	}
	ctx, cancel := context.WithTimeout(ctx, k.cfg.ReadyTimeout*time.Duration(len(before)))
	defer cancel()
	for _, old := range before {
		if _, err := k.run(ctx, "delete", "pod", old.Metadata.Name, "--wait=false"); err != nil {
			return fmt.Errorf("restart %s: %w", service, err)
		}
		if _, err := k.newPod(ctx, service, old); err != nil {
			return fmt.Errorf("restart %s: %w", service, err)
		}
	}
	return nil
}

// newPod waits until a pod named as old, but not old itself, is ready.
func (k *Kube) newPod(ctx context.Context, component string, old pod) (pod, error) {
	ctx, cancel := context.WithTimeout(ctx, k.cfg.ReadyTimeout)
	defer cancel()
	for {
		now, err := k.pods(ctx, component)
		for _, p := range now {
			if p.Metadata.Name == old.Metadata.Name && p.Metadata.UID != old.Metadata.UID && p.ready() {
				return p, nil
			}
		}
		select {
		case <-ctx.Done():
			return pod{}, fmt.Errorf("no new ready pod %s after %s (%v)", old.Metadata.Name, k.cfg.ReadyTimeout, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// FlushRedis runs FLUSHALL (on every primary of a Redis Cluster).
func (k *Kube) FlushRedis(ctx context.Context) error {
	if err := dial.ForEachPrimary(ctx, k.cfg.Redis, func(ctx context.Context, n *redis.Client) error { return n.FlushAll(ctx).Err() }); err != nil {
		return fmt.Errorf("flushall: %w", err)
	}
	return nil
}

// InFlight counts the replica's requests in flight inside its pod's network
// namespace. It needs the same host access as KillSIGKILL.
func (k *Kube) InFlight(ctx context.Context, name string) (int, string, error) {
	r, pid, _, err := k.replicaPID(ctx, name)
	if err != nil {
		return 0, "", err
	}
	return inFlight(pid, r)
}

// StallService freezes the main process of the service's pod (redis; in a
// Redis Cluster, the primary serving a key in use) from the node's host
// for d, then lets it go on (process.Stall). It needs the same host access
// as KillSIGKILL.
func (k *Kube) StallService(ctx context.Context, service string, d time.Duration) (int, error) {
	programs, err := stallPrograms(service)
	if err != nil {
		return 0, err
	}
	pods, err := k.pods(ctx, service)
	if err != nil {
		return 0, fmt.Errorf("stall %s: %w", service, err)
	}
	var target pod
	switch {
	case len(pods) == 1:
		target = pods[0]
	case len(pods) > 1: // a Redis Cluster: a primary serving a key in use
		nd, err := newFailover(kubeNodes{k}).slotPrimary(ctx)
		if err != nil {
			return 0, fmt.Errorf("stall %s: %w", service, err)
		}
		target.Metadata.Name, target.Metadata.UID = nd.Ref, nd.UID
	default:
		return 0, fmt.Errorf("stall %s: no pod running: %w", service, ErrNotRunning)
	}
	pid, err := k.statePID(target, programs)
	if err != nil {
		return 0, fmt.Errorf("stall %s: %w", service, err)
	}
	return pid, process.Stall(ctx, pid, d)
}
