package process

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/sockdiag"
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
	Redis      *redis.Client // the runtime's Redis, for FlushRedis
}

// Backend kills replicas by pid, restarts services through the harness and
// flushes Redis. It also implements fault.Prober. It is safe for concurrent
// use.
type Backend struct {
	cfg Config
}

// New returns a backend for the runtime described by cfg.
func New(cfg Config) *Backend {
	return &Backend{cfg: cfg}
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
	if err := kill(pid, 3*time.Second); err != nil {
		return pid, fmt.Errorf("kill %s: %w", name, err)
	}
	return pid, nil
}

// RestartService runs `harness restart <service>` (redis or rabbitmq), which
// returns once the service answers again.
func (b *Backend) RestartService(ctx context.Context, service string) error {
	switch service {
	case "redis", "rabbitmq":
	default:
		return fmt.Errorf("restart %q: only redis and rabbitmq can be restarted", service)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.cfg.Harness, "restart", service)
	cmd.Env = b.cfg.HarnessEnv
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("harness restart %s: %w: %s", service, err, strings.TrimSpace(lastLines(out.String(), 5)))
	}
	return nil
}

// FlushRedis runs FLUSHALL.
func (b *Backend) FlushRedis(ctx context.Context) error {
	if err := b.cfg.Redis.FlushAll(ctx).Err(); err != nil {
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

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
