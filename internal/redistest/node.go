package redistest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// HA topologies (Cluster, Sentinel) run on fixed ports from REDIS_HA_PORTS
// ("first-last", e.g. "7100-7139") with their state under REDIS_HA_DIR;
// scripts/harness exports both and removes what a killed test left behind.
// Cluster uses the first six ports, Sentinel the five from first+10, so
// one of each may run at a time in one test process. Only one package
// (pkg/idem) uses them, so `go test ./...` never runs two users at once.

// haPort returns the port at offset i of REDIS_HA_PORTS, failing the test
// with Hint when the variable is unset or the range too small.
func haPort(t testing.TB, i int) int {
	t.Helper()
	v := Env(t, "REDIS_HA_PORTS")
	lo, hi, ok := strings.Cut(v, "-")
	first, err1 := strconv.Atoi(lo)
	last, err2 := strconv.Atoi(hi)
	if !ok || err1 != nil || err2 != nil || first+i > last {
		t.Fatalf("REDIS_HA_PORTS=%q: want first-last with at least %d ports (scripts/harness env sets it)", v, i+1)
	}
	return first + i
}

// haDir returns a fresh directory REDIS_HA_DIR/name, emptied first: a
// topology always starts from nothing (a cluster node refuses to join a
// new cluster with an old nodes.conf).
func haDir(t testing.TB, name string) string {
	t.Helper()
	d := filepath.Join(Env(t, "REDIS_HA_DIR"), name)
	if err := os.RemoveAll(d); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// Node is one redis-server (or sentinel) process of a topology, with its
// own directory (redis.log, redis.pid, appendonlydir/, nodes.conf).
type Node struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	args []string // after the common ones

	mu  sync.Mutex
	cmd *exec.Cmd // nil while stopped
}

// newNode prepares a node in dir/name on port; Start runs it.
func newNode(t testing.TB, dir, name string, port int, args ...string) *Node {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not on PATH (scripts/harness up installs it): %v", err)
	}
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err != nil {
		t.Fatalf("port %d is taken (another test, or a topology a killed test left; scripts/harness down stops those): %v", port, err)
	} else {
		_ = ln.Close()
	}
	n := &Node{t: t, bin: bin, dir: d, port: port, args: args}
	t.Cleanup(n.Kill)
	return n
}

// Addr returns 127.0.0.1:port.
func (n *Node) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port)) }

// Dir returns the node's directory.
func (n *Node) Dir() string { return n.dir }

// Start runs the node (again, on the same port and directory) and waits
// until it answers PING. It is a no-op if the node runs. Problems are
// reported with t.Error.
func (n *Node) Start() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return
	}
	args := append([]string{}, n.args...)
	args = append(args, "--port", strconv.Itoa(n.port), "--bind", "127.0.0.1", "--dir", n.dir,
		"--logfile", "redis.log", "--pidfile", filepath.Join(n.dir, "redis.pid"))
	// #nosec G204 -- n.bin is the redis-server the harness installed; arguments are the test's own
	cmd := exec.Command(n.bin, args...)
	cmd.Dir = n.dir
	if err := cmd.Start(); err != nil {
		n.t.Errorf("start redis-server on %s: %v", n.Addr(), err)
		return
	}
	n.cmd = cmd
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			n.t.Errorf("redis-server on %s did not answer within 20s: %v (log: %s)", n.Addr(), err, filepath.Join(n.dir, "redis.log"))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill sends SIGKILL (a crash: writes after the last AOF fsync are lost)
// and waits until the process is gone. It is a no-op if the node is stopped.
func (n *Node) Kill() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Kill()
	_ = n.cmd.Wait()
	n.cmd = nil
}

// Freeze stops the process (SIGSTOP) until Thaw; Kill ends it too.
func (n *Node) Freeze() { n.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen node (SIGCONT).
func (n *Node) Thaw() { n.signal(syscall.SIGCONT) }

func (n *Node) signal(sig os.Signal) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return
	}
	if err := n.cmd.Process.Signal(sig); err != nil {
		n.t.Errorf("signal redis-server on %s: %v", n.Addr(), err)
	}
}

// Client returns a plain client of this node, closed at cleanup.
func (n *Node) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	n.t.Cleanup(func() { _ = c.Close() })
	return c
}

// waitFor polls cond every 50ms until it returns nil or d passes, then
// fails the test with what and cond's last error.
func waitFor(t testing.TB, d time.Duration, what string, cond func(context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := cond(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dataArgs are the settings every HA data node shares with the harness
// Redis: AOF fsynced every second, no RDB snapshots, boundary records kept
// as listpacks.
func dataArgs() []string {
	return []string{"--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
		"--hash-max-listpack-value", "2048"}
}
