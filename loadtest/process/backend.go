package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oncepay/oncepay/internal/proc"
	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/sockdiag"
	"github.com/oncepay/oncepay/pkg/service/dial"
	"github.com/redis/go-redis/v9"
)

// Replica describes one supervised process of the local runtime.
type Replica struct {
	Program string // base name of its executable: api, worker
	// ServerPort, if set, is the port it serves clients on: work in flight
	// is a request received and not yet answered (the api).
	ServerPort int
	// UpstreamPort, if set, is the port of the service it calls: work in
	// flight is a request sent there and not yet answered (the worker
	// calling the psp).
	UpstreamPort int
}

// Config is what the backend needs to know about the local runtime.
type Config struct {
	RunDir   string             // <RunDir>/<replica>/child.pid, written by the supervisor
	Replicas map[string]Replica // by name: api-1, worker-2, ...
	Harness  string             // path of scripts/harness
	// HarnessEnv is the complete environment of harness commands; it must
	// point the harness at the runtime's own state directory and ports.
	HarnessEnv []string
	Redis      redis.UniversalClient // the runtime's Redis, for FlushRedis
	// Broker deletes queues (DeleteQueue) and PSP takes the psp down
	// (PSPOutage); nil: the backend cannot.
	Broker *fault.Broker
	PSP    *fault.PSPAdmin
}

// Backend kills replicas by pid, restarts services through the harness and
// flushes Redis. It also implements fault.Prober. It is safe for concurrent
// use.
type Backend struct {
	fault.PSPFaults // psp-outage, reject-psp (Config.PSP)
	cfg             Config
}

// New returns a backend for the runtime described by cfg.
func New(cfg Config) *Backend {
	return &Backend{PSPFaults: fault.PSPFaults{PSP: cfg.PSP}, cfg: cfg}
}

func (b *Backend) replica(name string) (Replica, string, error) {
	r, ok := b.cfg.Replicas[name]
	if !ok {
		return Replica{}, "", fmt.Errorf("unknown replica %q", name)
	}
	return r, filepath.Join(b.cfg.RunDir, name), nil
}

// KillReplica sends SIGKILL to the replica's current process and waits until
// it is gone; its supervisor starts a new one. It returns the pid killed;
// the error wraps ErrNotRunning when there was no live process to kill.
func (b *Backend) KillReplica(ctx context.Context, name string) (int, error) {
	r, dir, err := b.replica(name)
	if err != nil {
		return 0, err
	}
	pid, err := replicaPID(dir, r.Program)
	if err != nil {
		return 0, fmt.Errorf("kill %s: %w", name, err)
	}
	if err := proc.KillWait(pid, 3*time.Second); err != nil {
		return pid, fmt.Errorf("kill %s: %w", name, err)
	}
	return pid, nil
}

// RestartService runs `harness restart <service>` (redis, rabbitmq or
// postgres), which returns once the service answers again.
func (b *Backend) RestartService(ctx context.Context, service string) error {
	return b.harness(ctx, service, "restart")
}

// KillService runs `harness kill <service>` (SIGKILL to the service and its
// children: a crash), then `harness start <service>`, which returns once
// it answers again. Redis comes back from its AOF (appendfsync everysec),
// Postgres from its WAL.
func (b *Backend) KillService(ctx context.Context, service string) error {
	return b.harness(ctx, service, "kill", "start")
}

// harness runs each harness command on service in turn.
func (b *Backend) harness(ctx context.Context, service string, commands ...string) error {
	switch service {
	case "redis", "rabbitmq", "postgres":
	default:
		return fmt.Errorf("%s %q: only redis, rabbitmq and postgres", commands[0], service)
	}
	for _, c := range commands {
		spec := proc.Spec{Name: "harness " + c + " " + service, Argv: []string{b.cfg.Harness, c, service}, Env: b.cfg.HarnessEnv, OnlyEnv: true}
		if _, err := proc.Run(ctx, spec, 3*time.Minute); err != nil {
			return err
		}
	}
	return nil
}

// FailoverRedis runs `harness failover-redis` (HARNESS_TOPOLOGY=ha).
func (b *Backend) FailoverRedis(ctx context.Context) (fault.Cost, error) {
	return b.failover(ctx, "failover-redis")
}

// MigrateSlot runs `harness migrate-slot`: 256 slots around a slot in use.
func (b *Backend) MigrateSlot(ctx context.Context) (fault.Cost, error) {
	return b.failover(ctx, "migrate-slot")
}

// KillQueueLeader runs `harness kill-queue-leader queue seconds`.
func (b *Backend) KillQueueLeader(ctx context.Context, queue string, down time.Duration) (fault.Cost, error) {
	return b.failover(ctx, "kill-queue-leader", queue, strconv.Itoa(int(down.Seconds())))
}

// PartitionQueueLeader runs `harness partition-for queue seconds` (root:
// iptables).
func (b *Backend) PartitionQueueLeader(ctx context.Context, queue string, d time.Duration) (fault.Cost, error) {
	return b.failover(ctx, "partition-for", queue, strconv.Itoa(int(d.Seconds())))
}

// PostgresReadyWithin bounds the wait after a Postgres fault until the
// cluster is whole again (scripts/patroni ready).
const PostgresReadyWithin = 2 * time.Minute

// FailoverPostgres runs `harness failover-postgres` (scripts/patroni
// failover: SIGKILL of the leader's Patroni and Postgres), with --lag MS
// when lag is positive (the leader's replication stream dropped first),
// then waits until the cluster is whole (postgres).
func (b *Backend) FailoverPostgres(ctx context.Context, lag time.Duration) (fault.Cost, error) {
	if lag > 0 {
		return b.postgres(ctx, "failover-postgres", "--lag", strconv.FormatInt(lag.Milliseconds(), 10))
	}
	return b.postgres(ctx, "failover-postgres")
}

// SwitchoverPostgres runs `harness switchover-postgres` (scripts/patroni
// switchover to the synchronous standby), then waits until the cluster is
// whole (postgres).
func (b *Backend) SwitchoverPostgres(ctx context.Context) (fault.Cost, error) {
	return b.postgres(ctx, "switchover-postgres")
}

// PartitionPostgres runs `harness partition-postgres seconds` (scripts/patroni
// partition: the leader cut from etcd and the other nodes), then waits
// until the cluster is whole (postgres).
func (b *Backend) PartitionPostgres(ctx context.Context, d time.Duration) (fault.Cost, error) {
	return b.postgres(ctx, "partition-postgres", strconv.Itoa(int(d.Seconds())))
}

// postgres runs one Postgres fault command (failover), then `harness
// patroni ready`, which returns once the cluster is whole: one leader,
// every other node streaming from it and done replaying its WAL, and in
// synchronous mode a synchronous standby. Patroni calls a replica running
// before it streams, so a fault that returned when the old leader rejoined
// would leave the next fault a half-recovered cluster. The wait is bounded
// by PostgresReadyWithin; its time is added to the cost's Detail, and a
// cluster not whole by then is the fault's error.
func (b *Backend) postgres(ctx context.Context, args ...string) (fault.Cost, error) {
	c, err := b.failover(ctx, args...)
	if err != nil {
		return c, err
	}
	t0 := time.Now()
	spec := proc.Spec{Name: "harness patroni ready", Argv: []string{b.cfg.Harness, "patroni", "ready", strconv.Itoa(int(PostgresReadyWithin.Seconds()))},
		Env: b.cfg.HarnessEnv, OnlyEnv: true}
	_, err = proc.Run(ctx, spec, PostgresReadyWithin+30*time.Second)
	took := time.Since(t0).Seconds()
	if err != nil {
		c.Detail = joinDetail(c.Detail, fmt.Sprintf("cluster NOT whole %.1fs later", took))
		return c, fmt.Errorf("%s: the cluster is not whole again within %s: %w", args[0], PostgresReadyWithin, err)
	}
	c.Detail = joinDetail(c.Detail, fmt.Sprintf("cluster whole (replicas streaming, replayed) %.1fs later", took))
	return c, nil
}

func joinDetail(detail, more string) string {
	if detail == "" {
		return more
	}
	return detail + "; " + more
}

// failover runs one harness fault command and reads its last line
// "cost: {JSON}".
func (b *Backend) failover(ctx context.Context, args ...string) (fault.Cost, error) {
	spec := proc.Spec{Name: "harness " + strings.Join(args, " "), Argv: append([]string{b.cfg.Harness}, args...), Env: b.cfg.HarnessEnv, OnlyEnv: true}
	r, err := proc.Run(ctx, spec, 3*time.Minute)
	c := fault.Cost{RefusedMS: -1}
	lines := strings.Split(strings.TrimSpace(r.Out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if js, ok := strings.CutPrefix(lines[i], "cost: "); ok {
			if jerr := json.Unmarshal([]byte(js), &c); jerr != nil {
				err = errors.Join(err, fmt.Errorf("%s: read its cost: %w", spec.Name, jerr))
			}
			break
		}
	}
	return c, err
}

// DeleteQueue deletes queue through the broker (fault.Broker).
func (b *Backend) DeleteQueue(ctx context.Context, queue string) (int, error) {
	if b.cfg.Broker == nil {
		return 0, fmt.Errorf("delete queue %s: no broker configured (AMQP_URL)", queue)
	}
	return b.cfg.Broker.DeleteQueue(ctx, queue)
}

// StallService freezes the service's process (redis, postgres or
// rabbitmq: the pid `harness status` reports) for d, then lets it go on;
// see stall. In a Redis Cluster (the ha topology) it freezes the primary
// that serves a key in use, a node the clients feel.
func (b *Backend) StallService(ctx context.Context, service string, d time.Duration) (int, error) {
	pid, err := b.stallPID(ctx, service)
	if err != nil {
		return 0, fmt.Errorf("stall %s: %w", service, err)
	}
	return pid, Stall(ctx, pid, d)
}

// stallPID is the pid StallService freezes.
func (b *Backend) stallPID(ctx context.Context, service string) (int, error) {
	cc, ok := b.cfg.Redis.(*redis.ClusterClient)
	if service != "redis" || !ok {
		return b.servicePID(ctx, service)
	}
	port, err := SlotPrimaryPort(ctx, cc)
	if err != nil {
		return 0, err
	}
	out, err := b.harnessStatus(ctx)
	if err != nil {
		return 0, err
	}
	return portPID(out, "redis-", port)
}

// SlotPrimaryPort returns the port of the Redis Cluster primary that serves
// the slot of a key in use (a random key of one of the primaries that hold
// any); with no key at all, the primary of a random slot.
func SlotPrimaryPort(ctx context.Context, cc *redis.ClusterClient) (int, error) {
	shards, err := cc.ClusterShards(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("cluster shards: %w", err)
	}
	var mu sync.Mutex
	var keys []string
	err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		key, err := n.RandomKey(ctx).Result()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, key)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("randomkey: %w", err)
	}
	slot := rand.IntN(16384)
	if len(keys) > 0 {
		key := keys[rand.IntN(len(keys))]
		n, err := cc.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			return 0, fmt.Errorf("cluster keyslot %q: %w", key, err)
		}
		slot = int(n)
	}
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if int64(slot) < r.Start || int64(slot) > r.End {
				continue
			}
			for _, n := range sh.Nodes {
				if n.Role == "master" {
					return int(n.Port), nil
				}
			}
		}
	}
	return 0, fmt.Errorf("cluster shards: no primary serves slot %d", slot)
}

// portPID reads, from `harness status` output, the pid of the running
// service named prefix<n> that serves port.
func portPID(out, prefix string, port int) (int, error) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasPrefix(f[0], prefix) || f[4] != "port" || f[5] != strconv.Itoa(port) {
			continue
		}
		return statusPID(line, f[0])
	}
	return 0, fmt.Errorf("harness status: no %s* on port %d: %w", prefix, port, ErrNotRunning)
}

// harnessStatus runs `harness status`.
func (b *Backend) harnessStatus(ctx context.Context) (string, error) {
	spec := proc.Spec{Name: "harness status", Argv: []string{b.cfg.Harness, "status"}, Env: b.cfg.HarnessEnv, OnlyEnv: true}
	r, err := proc.Run(ctx, spec, 30*time.Second)
	return r.Out, err
}

// servicePID asks `harness status` for the pid of a running service.
func (b *Backend) servicePID(ctx context.Context, service string) (int, error) {
	switch service {
	case "redis", "rabbitmq", "postgres":
	default:
		return 0, fmt.Errorf("%q: only redis, rabbitmq and postgres", service)
	}
	out, err := b.harnessStatus(ctx)
	if err != nil {
		return 0, err
	}
	return statusPID(out, service)
}

// statusPID reads the pid of service from `harness status` output, lines
// of "<service> running pid <pid> port <port> ...".
func statusPID(out, service string) (int, error) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[0] != service {
			continue
		}
		if f[1] != "running" || f[2] != "pid" {
			return 0, fmt.Errorf("harness status: %s is %s: %w", service, f[1], ErrNotRunning)
		}
		pid, err := strconv.Atoi(f[3])
		if err != nil || pid <= 1 {
			return 0, fmt.Errorf("harness status: %s pid %q is not a pid", service, f[3])
		}
		return pid, nil
	}
	return 0, fmt.Errorf("harness status: no line for %s: %w", service, ErrNotRunning)
}

// Stall stops pid (SIGSTOP, waiting until the kernel shows it stopped) for
// d, then lets it go on (SIGCONT), also when ctx ends first. The thaw is
// sent whatever happened, so a stall never leaves a process stopped.
func Stall(ctx context.Context, pid int, d time.Duration) error {
	if err := proc.Freeze(pid, time.Second); err != nil {
		return errors.Join(fmt.Errorf("stall pid %d: %w", pid, err), proc.Thaw(pid))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	if err := proc.Thaw(pid); err != nil {
		return fmt.Errorf("stall pid %d: thaw: %w", pid, err)
	}
	return nil
}

// FlushRedis runs FLUSHALL (on every primary of a Redis Cluster).
func (b *Backend) FlushRedis(ctx context.Context) error {
	if err := dial.ForEachPrimary(ctx, b.cfg.Redis, func(ctx context.Context, n *redis.Client) error { return n.FlushAll(ctx).Err() }); err != nil {
		return fmt.Errorf("flushall: %w", err)
	}
	return nil
}

// InFlight counts the replica's requests in flight from the kernel's TCP
// state (sockdiag.InFlight): for a replica with a ServerPort, client
// connections whose request was received and not yet answered; for one with
// an UpstreamPort, its connections to that port with a request sent and no
// answer yet.
func (b *Backend) InFlight(ctx context.Context, name string) (n int, evidence string, err error) {
	r, dir, err := b.replica(name)
	if err != nil {
		return 0, "", err
	}
	pid, err := replicaPID(dir, r.Program)
	if err != nil {
		return 0, "", err
	}
	return sockdiag.InFlight(pid, r.ServerPort, r.UpstreamPort)
}

// Freeze sends SIGSTOP to the replica's current process, waits (at most a
// second) until the kernel shows it stopped, and returns its pid. A signal
// is delivered when the process next runs, so without the wait it could
// still answer a request after Freeze returned.
func (b *Backend) Freeze(ctx context.Context, name string) (int, error) {
	r, dir, err := b.replica(name)
	if err != nil {
		return 0, err
	}
	pid, err := replicaPID(dir, r.Program)
	if err != nil {
		return 0, fmt.Errorf("freeze %s: %w", name, err)
	}
	if err := proc.Freeze(pid, time.Second); err != nil {
		_ = b.Thaw(pid)
		if errors.Is(err, proc.ErrGone) {
			return 0, fmt.Errorf("freeze %s: %w: %w", name, err, ErrNotRunning)
		}
		return 0, fmt.Errorf("freeze %s: %w", name, err)
	}
	return pid, nil
}

// Thaw sends SIGCONT to pid; a pid that is gone is no error.
func (b *Backend) Thaw(pid int) error { return proc.Thaw(pid) }

var (
	_ fault.Failoverer         = (*Backend)(nil)
	_ fault.PostgresFailoverer = (*Backend)(nil)
	_ fault.Staller            = (*Backend)(nil)
	_ fault.Rejecter           = (*Backend)(nil)
)
