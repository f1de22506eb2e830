package redistest

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncepay/oncepay/internal/proc"
)

// Server is a throw-away redis-server owned by one test, which the
// test may stop and start again without touching the shared Redis (so the
// test may run in parallel). Its data survives Stop and Start: it writes an
// append-only file fsynced on every write, so even a SIGKILL loses nothing,
// and a restart reloads it (answering LOADING meanwhile), as a production
// Redis with AOF does.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int

	mu     sync.Mutex
	p      *proc.Proc // nil while stopped
	closed bool       // the test ended: Start does nothing
}

// StartServer starts a private redis-server on a free port of 127.0.0.1 and
// waits until it answers. It is killed at cleanup. It fails the test if
// redis-server is not on PATH (scripts/harness up installs it).
func StartServer(t testing.TB) *Server {
	t.Helper()
	Integration(t)
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not on PATH (scripts/harness up installs it): %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	r := &Server{t: t, bin: bin, dir: t.TempDir(), port: port}
	t.Cleanup(func() {
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
		r.Stop()
	})
	r.Start()
	return r
}

// Addr returns host:port.
func (r *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

// URL returns redis://host:port/db.
func (r *Server) URL(db int) string { return fmt.Sprintf("redis://%s/%d", r.Addr(), db) }

// Client returns a client of database 0 with ContextTimeoutEnabled and no
// retries, closed at cleanup.
func (r *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Start starts the server (again) on the same port and directory and
// waits until it answers commands, the data set loaded. It is a no-op if
// the server runs. It may be called from any goroutine; it reports
// problems with t.Error, not t.Fatal.
func (r *Server) Start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p != nil || r.closed {
		return
	}
	// hash-max-listpack-value 2048 as every Redis oncepay starts: boundary
	// records stay listpacks (see scripts/harness).
	// #nosec G204 -- r.bin is the redis-server the harness installed; the arguments are constants and a free port
	p, err := proc.Start(proc.Spec{Name: "redis-server", Argv: []string{r.bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--save", "", "--appendonly", "yes", "--appendfsync", "always", "--hash-max-listpack-value", "2048"}})
	if err != nil {
		r.t.Error(err)
		return
	}
	r.p = p
	c := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Get(ctx, "redistest:probe").Err() // LOADING fails it; PING would not
		cancel()
		if err == nil || err == redis.Nil {
			return
		}
		if time.Now().After(deadline) {
			r.t.Errorf("private redis-server on %s did not answer within 10s: %v", r.Addr(), err)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server (SIGKILL, a crash; nothing is lost, see
// Server) and waits until it is gone. It is a no-op if the server is
// stopped. It may be called from any goroutine.
func (r *Server) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p == nil {
		return
	}
	r.p.Kill()
	r.p = nil
}

// Freeze stops the server process (SIGSTOP) and returns once the kernel
// shows it stopped: it keeps its connections and accepts new ones, but
// answers nothing until Thaw, as a Redis stalled by the host does. It is a
// no-op if the server is stopped. Stop and the cleanup kill a frozen server
// too.
func (r *Server) Freeze() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p == nil {
		return
	}
	if err := proc.Freeze(r.p.PID, time.Second); err != nil {
		r.t.Errorf("redis-server: %v", err)
	}
}

// Thaw resumes a server that Freeze stopped (SIGCONT).
func (r *Server) Thaw() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p == nil {
		return
	}
	if err := proc.Thaw(r.p.PID); err != nil {
		r.t.Errorf("redis-server: %v", err)
	}
}

// Outage stops the server now and starts it again after d, in the
// background. Wait for the returned channel, which is closed once the
// server answers again.
func (r *Server) Outage(d time.Duration) <-chan struct{} {
	r.Stop()
	back := make(chan struct{})
	go func() {
		defer close(back)
		time.Sleep(d)
		r.Start()
	}()
	return back
}

// fillMargin is how far Fill puts the used memory above maxmemory: far more
// than the few KB that client buffers move it by, so the server stays full.
const fillMargin = 512 << 10

// Fill makes the server full, as a production Redis with maxmemory and
// maxmemory-policy noeviction gets full: it writes 1 MiB of filler
// (redistest:fill, in 16 KiB appends), then sets maxmemory-policy noeviction
// and maxmemory 512 KiB below the memory then in use. (maxmemory is set
// after the write because small writes up to the limit leave it a few bytes
// away, where buffers come and go. The filler goes in small pieces because
// Redis counts a client's query buffer as used memory and frees a large one
// later, in its cron: after one 1 MiB SET, used_memory falls by more than
// the margin a few seconds afterwards, and Redis takes writes again.)
// From then on Redis
// refuses every command that may grow memory, a script's first write
// included, with "OOM command not allowed when used memory > 'maxmemory'",
// and still answers reads and deletes. Fill fails the test unless a write
// is refused so afterwards. Unfill ends it.
func (r *Server) Fill() {
	r.t.Helper()
	ctx := context.Background()
	c := r.Client()
	piece := strings.Repeat("x", 16<<10)
	for range 64 {
		if err := c.Append(ctx, "redistest:fill", piece).Err(); err != nil {
			r.t.Fatalf("fill: write the filler: %v", err)
		}
	}
	used := r.usedMemory(c)
	if err := c.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		r.t.Fatalf("fill: CONFIG SET maxmemory-policy noeviction: %v", err)
	}
	if err := c.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used-fillMargin, 10)).Err(); err != nil {
		r.t.Fatalf("fill: CONFIG SET maxmemory: %v", err)
	}
	if err := c.Set(ctx, "redistest:fill:probe", "x", 0).Err(); !redis.IsOOMError(err) {
		r.t.Fatalf("fill: with used_memory %d above maxmemory %d a SET answered %v, want an OOM error", used, used-fillMargin, err)
	}
}

// Unfill lifts the limit that Fill set (CONFIG SET maxmemory 0): Redis
// accepts writes again. The filler stays.
func (r *Server) Unfill() {
	r.t.Helper()
	if err := r.Client().ConfigSet(context.Background(), "maxmemory", "0").Err(); err != nil {
		r.t.Fatalf("unfill: CONFIG SET maxmemory 0: %v", err)
	}
}

// usedMemory returns INFO memory's used_memory.
func (r *Server) usedMemory(c *redis.Client) int64 {
	r.t.Helper()
	info := c.InfoMap(context.Background(), "memory")
	if err := info.Err(); err != nil {
		r.t.Fatalf("INFO memory: %v", err)
	}
	n, err := strconv.ParseInt(info.Item("Memory", "used_memory"), 10, 64)
	if err != nil {
		r.t.Fatalf("INFO memory: used_memory: %v", err)
	}
	return n
}
