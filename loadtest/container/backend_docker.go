package container

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oncepay/oncepay/pkg/service/dial"
	"github.com/redis/go-redis/v9"

	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/process"
)

// DockerConfig describes a Docker Compose deployment of oncepay
// (docker-compose.yml): replicas and services are compose service names.
type DockerConfig struct {
	Project string // compose project name (deploy/compose/run: oncepay)
	// Replicas by compose service name (api-1, worker-2, ...). Ports are the
	// ones inside the containers: api ServerPort 8080, worker UpstreamPort 8090.
	Replicas map[string]process.Replica
	Redis    redis.UniversalClient // the stack's Redis, for FlushRedis
	// Docker is the docker CLI (default "docker").
	Docker string
	// HealthTimeout bounds RestartService's wait for healthy (default 3m).
	HealthTimeout time.Duration
	// PSP, if set, is the psp's admin API: the psp fault kinds go through it.
	PSP *fault.PSPAdmin
}

// DefaultComposeReplicas are the replicas of docker-compose.yml.
func DefaultComposeReplicas() map[string]process.Replica {
	return map[string]process.Replica{
		"api-1":    {Program: "api", ServerPort: 8080},
		"api-2":    {Program: "api", ServerPort: 8080},
		"worker-1": {Program: "worker", UpstreamPort: 8090},
		"worker-2": {Program: "worker", UpstreamPort: 8090},
	}
}

// Docker is the fault backend for Docker Compose. It implements
// fault.Backend and fault.Prober and is safe for concurrent use.
type Docker struct {
	fault.PSPFaults // psp-outage, reject-psp (DockerConfig.PSP)
	cfg             DockerConfig
	run             func(ctx context.Context, args ...string) ([]byte, error)
	pids            pidCache
}

// NewDocker returns a backend for the compose project in cfg.
func NewDocker(cfg DockerConfig) *Docker {
	if cfg.Docker == "" {
		cfg.Docker = "docker"
	}
	if cfg.HealthTimeout <= 0 {
		cfg.HealthTimeout = 3 * time.Minute
	}
	d := &Docker{PSPFaults: fault.PSPFaults{PSP: cfg.PSP}, cfg: cfg}
	d.run = func(ctx context.Context, args ...string) ([]byte, error) {
		out, err := exec.CommandContext(ctx, d.cfg.Docker, args...).Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out, fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return out, err
	}
	return d
}

// containerID returns the id of the running container of a compose service.
func (d *Docker) containerID(ctx context.Context, service string) (string, error) {
	out, err := d.run(ctx, "ps", "-q", "--no-trunc",
		"--filter", "label=com.docker.compose.project="+d.cfg.Project,
		"--filter", "label=com.docker.compose.service="+service)
	if err != nil {
		return "", err
	}
	ids := strings.Fields(string(out))
	if len(ids) == 0 {
		return "", fmt.Errorf("compose service %s of project %s: no running container: %w", service, d.cfg.Project, ErrNotRunning)
	}
	return ids[0], nil
}

// replicaPID returns the host pid of the replica's main process.
func (d *Docker) replicaPID(ctx context.Context, name string) (process.Replica, int, error) {
	r, ok := d.cfg.Replicas[name]
	if !ok {
		return process.Replica{}, 0, fmt.Errorf("unknown replica %q", name)
	}
	if pid, _, ok := d.pids.get(name, r.Program); ok {
		return r, pid, nil
	}
	id, err := d.containerID(ctx, name)
	if err != nil {
		return r, 0, err
	}
	out, err := d.run(ctx, "inspect", "-f", "{{.State.Pid}}", id)
	if err != nil {
		return r, 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || pid <= 0 {
		return r, 0, fmt.Errorf("%s: container %.12s has no pid: %w", name, id, ErrNotRunning)
	}
	if got := exeBase("/proc", pid); got != r.Program {
		return r, 0, fmt.Errorf("%s: pid %d runs %q, not %s (is the driver on the docker host, as root?)", name, pid, got, r.Program)
	}
	d.pids.put(name, pid, "")
	return r, pid, nil
}

// KillReplica sends SIGKILL to the replica container's main process from
// the host and waits until it is gone. Compose's restart policy
// (unless-stopped) starts the container again, as after a crash.
func (d *Docker) KillReplica(ctx context.Context, name string) (int, error) {
	_, pid, err := d.replicaPID(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("kill %s: %w", name, err)
	}
	if err := sigkill(pid, 3*time.Second); err != nil {
		return pid, fmt.Errorf("kill %s: %w", name, err)
	}
	return pid, nil
}

// RestartService restarts redis or rabbitmq cleanly (docker restart) and
// returns once its healthcheck passes again.
func (d *Docker) RestartService(ctx context.Context, service string) error {
	switch service {
	case "redis", "rabbitmq":
	default:
		return fmt.Errorf("restart %q: only redis and rabbitmq can be restarted", service)
	}
	id, err := d.containerID(ctx, service)
	if err != nil {
		return fmt.Errorf("restart %s: %w", service, err)
	}
	if _, err := d.run(ctx, "restart", "-t", "30", id); err != nil {
		return fmt.Errorf("restart %s: %w", service, err)
	}
	if err := d.healthy(ctx, id); err != nil {
		return fmt.Errorf("restart %s: %w", service, err)
	}
	return nil
}

// healthy waits until the container's healthcheck passes (or, without
// one, until it runs).
func (d *Docker) healthy(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.HealthTimeout)
	defer cancel()
	for {
		out, err := d.run(ctx, "inspect", "-f", "{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}", id)
		status := strings.TrimSpace(string(out))
		if err == nil && (status == "healthy" || status == "running") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("container %.12s not healthy after %s (last: %q, %v)", id, d.cfg.HealthTimeout, status, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// FlushRedis runs FLUSHALL (on every primary of a Redis Cluster).
func (d *Docker) FlushRedis(ctx context.Context) error {
	if err := dial.ForEachPrimary(ctx, d.cfg.Redis, func(ctx context.Context, n *redis.Client) error { return n.FlushAll(ctx).Err() }); err != nil {
		return fmt.Errorf("flushall: %w", err)
	}
	return nil
}

// InFlight counts the replica's requests in flight inside its container's
// network namespace (see the package documentation).
func (d *Docker) InFlight(ctx context.Context, name string) (int, string, error) {
	r, pid, err := d.replicaPID(ctx, name)
	if err != nil {
		return 0, "", err
	}
	return inFlight(pid, r)
}

// StallService freezes the main process of a compose service (redis) from
// the host for d, then lets it go on (process.Stall). Like the kills, it
// needs root on the docker host.
func (d *Docker) StallService(ctx context.Context, service string, dur time.Duration) (int, error) {
	programs, err := stallPrograms(service)
	if err != nil {
		return 0, err
	}
	id, err := d.containerID(ctx, service)
	if err != nil {
		return 0, fmt.Errorf("stall %s: %w", service, err)
	}
	out, err := d.run(ctx, "inspect", "-f", "{{.State.Pid}}", id)
	if err != nil {
		return 0, fmt.Errorf("stall %s: %w", service, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("stall %s: container %.12s has no pid: %w", service, id, ErrNotRunning)
	}
	if got := exeBase("/proc", pid); !slices.Contains(programs, got) {
		return 0, fmt.Errorf("stall %s: pid %d runs %q, not %s (is the driver on the docker host, as root?)", service, pid, got, strings.Join(programs, " or "))
	}
	return pid, process.Stall(ctx, pid, dur)
}
