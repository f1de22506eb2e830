package process_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncepay/oncepay/internal/proc"
	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/process"
)

// patroniCluster is Postgres under Patroni started by scripts/patroni for
// one test: three nodes, etcd, synchronous_mode (unless the environment
// says PATRONI_SYNCHRONOUS_MODE=false).
type patroniCluster struct {
	script  string   // scripts/patroni
	harness string   // scripts/harness, which runs the faults
	env     []string // their complete environment
	dir     string   // PATRONI_DIR
	base    int      // PATRONI_PORT_BASE: pg-N listens on base+N-1
}

// startPatroni starts a cluster on PATRONI_PORT_BASE (default 7160) in a
// fresh state directory and stops it when the test ends. patroni, etcd and
// jq must be installed (scripts/harness up installs them as root).
func startPatroni(t *testing.T) *patroniCluster {
	t.Helper()
	for _, p := range []string{"patroni", "etcd", "jq"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s is not installed: apt-get install patroni etcd-server jq (scripts/harness up installs them as root)", p)
		}
	}
	h := os.Getenv("ONCEPAY_HARNESS")
	if h == "" {
		t.Fatal(`ONCEPAY_HARNESS is not set: start the services with make test, or eval "$(scripts/harness env)" before go test`)
	}
	base := 7160
	if v := os.Getenv("PATRONI_PORT_BASE"); v != "" {
		var err error
		if base, err = strconv.Atoi(v); err != nil {
			t.Fatalf("PATRONI_PORT_BASE %q: %v", v, err)
		}
	}
	dir, err := os.MkdirTemp("", "oncepay-patroni-")
	if err != nil {
		t.Fatal(err)
	}
	// as root, Patroni runs as the postgres user, which must reach the directory
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &patroniCluster{script: filepath.Join(filepath.Dir(h), "patroni"), harness: h, dir: dir, base: base,
		env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "PATRONI_DIR=" + dir,
			"PATRONI_PORT_BASE=" + strconv.Itoa(base)}}
	if v := os.Getenv("PATRONI_SYNCHRONOUS_MODE"); v != "" {
		c.env = append(c.env, "PATRONI_SYNCHRONOUS_MODE="+v)
	}
	t.Cleanup(func() {
		if out, err := c.run(context.Background(), "down", "--purge"); err != nil {
			t.Errorf("scripts/patroni down: %v\n%s", err, out)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := c.run(ctx, "up"); err != nil {
		t.Fatalf("scripts/patroni up: %v\n%s", err, out)
	}
	return c
}

func (c *patroniCluster) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.script, args...) // #nosec G204 -- the repository's own script
	cmd.Env = c.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// member prints the leader (what "leader") or the synchronous standby
// ("sync"): pg-N.
func (c *patroniCluster) member(t *testing.T, what string) string {
	t.Helper()
	out, err := c.run(context.Background(), what)
	if err != nil {
		t.Fatalf("scripts/patroni %s: %v\n%s", what, err, out)
	}
	lines := strings.Fields(out)
	return lines[len(lines)-1]
}

// port is the Postgres port of node pg-N.
func (c *patroniCluster) port(t *testing.T, node string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimPrefix(node, "pg-"))
	if err != nil {
		t.Fatalf("node %q: %v", node, err)
	}
	return c.base + n - 1
}

// dsn is the services' connection string: every node, read-write.
func (c *patroniCluster) dsn() string {
	return fmt.Sprintf("postgres://oncepay:oncepay@127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/oncepay?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		c.base, c.base+1, c.base+2)
}

func (c *patroniCluster) backend() *process.Backend {
	return process.New(process.Config{Harness: c.harness, HarnessEnv: c.env})
}

// writer inserts rows through the multi-host DSN, as the services do,
// from four connections at once, and remembers every insert that was
// acknowledged (its commit returned without error).
type writer struct {
	pool   *pgxpool.Pool
	table  string
	mu     sync.Mutex
	acked  []int64
	failed int
	stop   context.CancelFunc
	done   sync.WaitGroup
}

func startWriter(t *testing.T, c *patroniCluster, table string) *writer {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, c.dsn())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, "CREATE TABLE "+table+" (id bigint PRIMARY KEY)"); err != nil {
		t.Fatalf("create %s: %v", table, err)
	}
	w := &writer{pool: pool, table: table}
	wctx, stop := context.WithCancel(ctx)
	w.stop = stop
	for g := range 4 {
		w.done.Add(1)
		go func() {
			defer w.done.Done()
			for i := int64(g); wctx.Err() == nil; i += 4 {
				qctx, cancel := context.WithTimeout(wctx, 3*time.Second)
				_, err := pool.Exec(qctx, "INSERT INTO "+table+" (id) VALUES ($1)", i)
				cancel()
				w.mu.Lock()
				if err == nil {
					w.acked = append(w.acked, i)
				} else {
					w.failed++
				}
				w.mu.Unlock()
				if err != nil {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	return w
}

// waitAcked waits until n more inserts were acknowledged: the load runs.
func (w *writer) waitAcked(t *testing.T, n int) {
	t.Helper()
	w.mu.Lock()
	want := len(w.acked) + n
	w.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		got := len(w.acked)
		w.mu.Unlock()
		if got >= want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: fewer than %d inserts acknowledged within 30s", w.table, n)
}

// checkNoneLost stops the writer and fails the test for every acknowledged
// insert that the primary does not hold.
func (w *writer) checkNoneLost(t *testing.T) {
	t.Helper()
	w.stop()
	w.done.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	held := map[int64]bool{}
	rows, err := w.pool.Query(ctx, "SELECT id FROM "+w.table)
	if err != nil {
		t.Fatalf("read %s on the primary: %v", w.table, err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		held[id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var lost []int64
	for _, id := range w.acked {
		if !held[id] {
			lost = append(lost, id)
		}
	}
	t.Logf("%s: %d inserts acknowledged, %d failed, %d rows on the primary", w.table, len(w.acked), w.failed, len(held))
	if len(lost) > 0 {
		t.Errorf("%d acknowledged inserts are missing on the new primary, e.g. %v", len(lost), lost[:min(len(lost), 10)])
	}
}

// walReceivers returns the pids of the WAL receivers of every node but
// leader: the children of each replica's postmaster named walreceiver.
func (c *patroniCluster) walReceivers(t *testing.T, leader string) []int {
	t.Helper()
	var pids []int
	for n := 1; n <= 3; n++ {
		node := "pg-" + strconv.Itoa(n)
		if node == leader {
			continue
		}
		pm, err := os.ReadFile(filepath.Join(c.dir, node, "data", "postmaster.pid"))
		if err != nil {
			t.Fatalf("%s: %v", node, err)
		}
		postmaster, _, _ := strings.Cut(string(pm), "\n")
		stats, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, f := range stats {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			_, rest, _ := strings.Cut(string(b), ") ")
			if fs := strings.Fields(rest); len(fs) < 2 || fs[1] != strings.TrimSpace(postmaster) {
				continue
			}
			cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "cmdline"))
			if bytes.Contains(cmd, []byte("walreceiver")) {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
				pids = append(pids, pid)
			}
		}
	}
	if len(pids) != 2 {
		t.Fatalf("found WAL receivers %v, want one per replica", pids)
	}
	return pids
}

// TestPatroniFaults applies each Postgres fault kind of the ha topology to
// a real Patroni cluster under a load of inserts, through the local
// backend (scripts/harness, scripts/patroni), and checks what each must
// guarantee. One cluster serves the three, in turn.
func TestPatroniFaults(t *testing.T) {
	c := startPatroni(t)
	b := c.backend()

	// failover: the leader's host dies while commits wait on the
	// replicas (their WAL receivers frozen for a second, so that the
	// replicas are behind the leader's WAL at the kill). Synchronous
	// replication acknowledges no commit the sync standby lacks, and only
	// the sync standby is promoted: nothing acknowledged may be missing.
	// With PATRONI_SYNCHRONOUS_MODE=false this subtest fails.
	t.Run("failover-postgres", func(t *testing.T) {
		w := startWriter(t, c, "acked_failover")
		w.waitAcked(t, 200)
		old := c.member(t, "leader")
		receivers := c.walReceivers(t, old)
		for _, pid := range receivers {
			if err := proc.Freeze(pid, time.Second); err != nil {
				t.Fatalf("freeze walreceiver %d: %v", pid, err)
			}
		}
		time.Sleep(time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		type result struct {
			cost fault.Cost
			err  error
		}
		res := make(chan result, 1)
		go func() {
			cost, err := b.FailoverPostgres(ctx)
			res <- result{cost, err}
		}()
		// the kill is under way once the old leader's port refuses
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && portOpen(c.port(t, old)) {
			time.Sleep(20 * time.Millisecond)
		}
		for _, pid := range receivers {
			_ = proc.Thaw(pid)
		}
		r := <-res
		if r.err != nil {
			t.Fatalf("failover: %v", r.err)
		}
		t.Logf("failover cost: %+v", r.cost)
		if r.cost.Node != old || r.cost.PromotedMS < 0 || r.cost.RefusedMS < 0 {
			t.Errorf("cost %+v: want node %s, a new primary and writes taken again", r.cost, old)
		}
		if !strings.Contains(r.cost.Detail, "rejoined as a replica: yes") {
			t.Errorf("cost %+v: the killed node did not rejoin as a replica", r.cost)
		}
		w.checkNoneLost(t)
	})

	// switchover: planned, to the synchronous standby; nothing
	// acknowledged lost, the old leader a replica after it.
	t.Run("switchover-postgres", func(t *testing.T) {
		w := startWriter(t, c, "acked_switchover")
		w.waitAcked(t, 200)
		old, sync := c.member(t, "leader"), c.member(t, "sync")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cost, err := b.SwitchoverPostgres(ctx)
		if err != nil {
			t.Fatalf("switchover: %v", err)
		}
		t.Logf("switchover cost: %+v", cost)
		if now := c.member(t, "leader"); now != sync {
			t.Errorf("leader after the switchover %s, want the synchronous standby %s (was %s)", now, sync, old)
		}
		if cost.PromotedMS < 0 || cost.RefusedMS < 0 || !strings.Contains(cost.Detail, "a replica again: yes") {
			t.Errorf("cost %+v: want a new primary, writes taken again, the old leader a replica", cost)
		}
		w.checkNoneLost(t)
	})

	// partition: the leader cut from etcd and the other nodes while its
	// Postgres still serves. Patroni must demote it when it cannot renew
	// its leader key (ttl 10 s): after 20 s a write sent to it directly
	// must not commit, not even one that waits for no standby. No two primaries accept writes, nothing
	// acknowledged is lost.
	t.Run("partition-postgres", func(t *testing.T) {
		w := startWriter(t, c, "acked_partition")
		w.waitAcked(t, 200)
		old := c.member(t, "leader")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		type result struct {
			cost fault.Cost
			err  error
		}
		res := make(chan result, 1)
		go func() {
			cost, err := b.PartitionPostgres(ctx, 30*time.Second)
			res <- result{cost, err}
		}()
		time.Sleep(20 * time.Second)
		if err := writeDirect(c.port(t, old)); err == nil {
			t.Errorf("%s, cut off for 20s, still commits writes: it was not demoted", old)
		} else {
			t.Logf("%s refuses writes 20s into the partition: %v", old, err)
		}
		r := <-res
		if r.err != nil {
			t.Fatalf("partition: %v", r.err)
		}
		t.Logf("partition cost: %+v", r.cost)
		if r.cost.DemotedMS < 0 || r.cost.PromotedMS < 0 || r.cost.RefusedMS < 0 {
			t.Errorf("cost %+v: want the old leader demoted, a new primary, writes taken again", r.cost)
		}
		w.checkNoneLost(t)
	})
}

// writeDirect commits one write on the Postgres at port itself (no other
// host, no read-write filter), within 3 s. synchronous_commit=local: it
// commits if and only if that Postgres is a primary, whether or not its
// synchronous standby answers.
func writeDirect(port int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, fmt.Sprintf("postgres://oncepay:oncepay@127.0.0.1:%d/oncepay?sslmode=disable&connect_timeout=2", port))
	if err != nil {
		return err
	}
	defer pool.Close()
	_, err = pool.Exec(ctx, "SET synchronous_commit = local; CREATE TABLE IF NOT EXISTS split_brain (at timestamptz); INSERT INTO split_brain VALUES (now())")
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no commit within 3s: %w", err)
	}
	return err
}

func portOpen(port int) bool {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}
