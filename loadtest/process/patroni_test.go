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
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

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
// jq must be installed (scripts/harness up installs them as root). env
// adds scripts/patroni settings (NAME=VALUE) to the environment's.
func startPatroni(t *testing.T, env ...string) *patroniCluster {
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
	// runs after down --purge; left behind when env sets another PATRONI_DIR
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
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
	c.env = append(c.env, env...)
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
	if len(lines) == 0 {
		t.Fatalf("scripts/patroni %s printed nothing", what)
	}
	return lines[len(lines)-1]
}

// ready waits (up to two minutes) until the cluster is whole, as a fault
// needs it: one leader, every other node streaming from it and done
// replaying the leader's WAL up to now, and in synchronous mode a
// synchronous standby (scripts/patroni ready). A fault injected before
// that measures the previous fault's recovery, not its own.
func (c *patroniCluster) ready(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := c.run(ctx, "ready", "120"); err != nil {
		status, _ := c.run(context.Background(), "status")
		t.Fatalf("the cluster is not whole before the fault: scripts/patroni ready 120: %v\n%s\n%s", err, out, status)
	}
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
	// a test that fails before lost stops its writers too (before the pool closes)
	t.Cleanup(func() {
		stop()
		w.done.Wait()
	})
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

// lost stops the writer and returns every acknowledged insert that the
// primary does not hold.
func (w *writer) lost(t *testing.T) []int64 {
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
	t.Logf("%s: %d inserts acknowledged, %d failed, %d rows on the primary, %d acknowledged missing",
		w.table, len(w.acked), w.failed, len(held), len(lost))
	return lost
}

// checkNoneLost fails the test for every acknowledged insert that the
// primary does not hold.
func (w *writer) checkNoneLost(t *testing.T) {
	t.Helper()
	if lost := w.lost(t); len(lost) > 0 {
		t.Errorf("%d acknowledged inserts are missing on the new primary, e.g. %v", len(lost), lost[:min(len(lost), 10)])
	}
}

// TestPatroniFaults applies each Postgres fault kind of the ha topology to
// a real Patroni cluster under a load of inserts, through the local
// backend (scripts/harness, scripts/patroni), and checks what each must
// guarantee. One cluster serves the three, in turn; each starts once the
// previous one's cluster is whole again (ready).
func TestPatroniFaults(t *testing.T) {
	c := startPatroni(t)
	b := c.backend()

	// failover: the leader's host dies under load; a replica is promoted,
	// the old leader rejoins as a replica, nothing acknowledged is lost
	// (TestPatroniFailoverLoss shows that this takes synchronous mode).
	t.Run("failover-postgres", func(t *testing.T) {
		w := startWriter(t, c, "acked_failover")
		w.waitAcked(t, 200)
		c.ready(t)
		old := c.member(t, "leader")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cost, err := b.FailoverPostgres(ctx, 0)
		if err != nil {
			t.Fatalf("failover: %v", err)
		}
		t.Logf("failover cost: %+v", cost)
		if cost.Node != old || cost.PromotedMS < 0 || cost.RefusedMS < 0 {
			t.Errorf("cost %+v: want node %s, a new primary and writes taken again", cost, old)
		}
		if !strings.Contains(cost.Detail, "rejoined as a replica: yes") || !strings.Contains(cost.Detail, "cluster whole") {
			t.Errorf("cost %+v: the killed node did not rejoin as a replica, or the fault did not wait until the cluster was whole", cost)
		}
		w.checkNoneLost(t)
	})

	// switchover: planned, to the synchronous standby; nothing
	// acknowledged lost, the old leader a replica after it.
	t.Run("switchover-postgres", func(t *testing.T) {
		w := startWriter(t, c, "acked_switchover")
		w.waitAcked(t, 200)
		c.ready(t)
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
		if cost.PromotedMS < 0 || cost.RefusedMS < 0 || !strings.Contains(cost.Detail, "a replica again: yes") || !strings.Contains(cost.Detail, "cluster whole") {
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
		c.ready(t)
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
		if r.cost.DemotedMS < 0 || r.cost.PromotedMS < 0 || r.cost.RefusedMS < 0 || !strings.Contains(r.cost.Detail, "cluster whole") {
			t.Errorf("cost %+v: want the old leader demoted, a new primary, writes taken again, the cluster whole after", r.cost)
		}
		w.checkNoneLost(t)
	})
}

// TestPatroniFailoverLoss is the question a payments system must answer:
// the primary's host dies while its replicas are behind (its replication
// stream dropped for two seconds under load, scripts/patroni failover
// --lag); is any acknowledged commit missing on the promoted replica? With
// synchronous_mode none is: commits wait for the synchronous standby and
// only it is promoted. Without it (and a maximum_lag_on_failover that lets
// the lagging replica promote, as a team that prefers availability sets
// it) the commits of those seconds were acknowledged and are gone: the
// asynchronous case is the check's seeded fault, and it must see loss.
func TestPatroniFailoverLoss(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      []string
		wantLoss bool
	}{
		{"synchronous", []string{"PATRONI_SYNCHRONOUS_MODE=true"}, false},
		{"asynchronous", []string{"PATRONI_SYNCHRONOUS_MODE=false", "PATRONI_MAXIMUM_LAG_ON_FAILOVER=1073741824"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startPatroni(t, tc.env...)
			w := startWriter(t, c, "acked_lag")
			w.waitAcked(t, 200)
			// the replicas hold the role, the table and the rows so far: what
			// the promoted one lacks is what the held seconds took
			c.ready(t)
			old := c.member(t, "leader")
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			out, err := c.run(ctx, "failover", "--lag", "2000")
			if err != nil {
				t.Fatalf("scripts/patroni failover --lag 2000: %v\n%s", err, out)
			}
			t.Logf("failover of %s:\n%s", old, out)
			if !strings.Contains(out, "rejoined as a replica: yes") || strings.Contains(out, "new primary none") {
				t.Fatalf("failover of %s: want a new primary and the old leader a replica again", old)
			}
			lost := w.lost(t)
			if got := len(lost) > 0; got != tc.wantLoss {
				t.Errorf("acknowledged inserts lost: %d (e.g. %v); want loss %v", len(lost), lost[:min(len(lost), 10)], tc.wantLoss)
			}
		})
	}
}

// TestHarnessDownStopsPatroni: `scripts/harness down` stops the Postgres
// under Patroni that an ha up started in its state directory, whatever
// HARNESS_TOPOLOGY says when it runs.
func TestHarnessDownStopsPatroni(t *testing.T) {
	h := os.Getenv("ONCEPAY_HARNESS")
	if h == "" {
		t.Fatal(`ONCEPAY_HARNESS is not set: start the services with make test, or eval "$(scripts/harness env)" before go test`)
	}
	run, err := os.MkdirTemp("", "oncepay-run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(run) })
	if err := os.Chmod(run, 0o755); err != nil {
		t.Fatal(err)
	}
	// the harness's state directory holds patroni/, as after an ha up
	c := startPatroni(t, "PATRONI_DIR="+filepath.Join(run, "harness", "patroni"))
	c.dir = filepath.Join(run, "harness", "patroni")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "ONCEPAY_RUN_DIR=" + run,
		"PATRONI_PORT_BASE=" + strconv.Itoa(c.base), "HARNESS_TOPOLOGY=single"}
	for _, k := range []string{"HARNESS_REDIS_PORT", "HARNESS_PG_PORT", "HARNESS_AMQP_PORT", "HARNESS_REDIS_HA_PORTS"} {
		env = append(env, k+"="+os.Getenv(k))
	}
	cmd := exec.Command(h, "down") // #nosec G204 -- the repository's own script
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/harness down: %v\n%s", err, out)
	}
	if out, err := c.run(context.Background(), "running"); err == nil {
		t.Errorf("after scripts/harness down, Patroni, etcd or Toxiproxy still runs:\n%s", out)
	}
	for n := 1; n <= 3; n++ {
		if port := c.base + n - 1; portOpen(port) {
			t.Errorf("after scripts/harness down, Postgres pg-%d still listens on %d", n, port)
		}
	}
}

// TestPatroniRefusesAnotherFirstConfig: Patroni keeps the configuration
// it bootstrapped with in etcd, so an up that asks for asynchronous
// replication on a synchronous cluster's state would run synchronous
// while saying otherwise; scripts/patroni up must refuse it instead.
func TestPatroniRefusesAnotherFirstConfig(t *testing.T) {
	c := startPatroni(t, "PATRONI_SYNCHRONOUS_MODE=true")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := c.run(ctx, "down"); err != nil {
		t.Fatalf("scripts/patroni down: %v\n%s", err, out)
	}
	async := *c
	async.env = append(append([]string(nil), c.env...), "PATRONI_SYNCHRONOUS_MODE=false")
	out, err := async.run(ctx, "up")
	if err == nil || !strings.Contains(out, "down --purge") {
		t.Errorf("up with PATRONI_SYNCHRONOUS_MODE=false on a synchronous cluster's state: err %v, want a refusal that says down --purge\n%s", err, out)
	}
}

// TestPatroniDaemonsHoldNoCallerLock: the processes scripts/patroni up
// starts keep none of its caller's descriptors. scripts/harness runs up
// while it holds its lock; daemons that inherited that descriptor held
// the lock as long as they ran, and the next harness command waited five
// minutes and failed.
func TestPatroniDaemonsHoldNoCallerLock(t *testing.T) {
	c := startPatroni(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := c.run(ctx, "down"); err != nil {
		t.Fatalf("scripts/patroni down: %v\n%s", err, out)
	}
	path := filepath.Join(c.dir, "caller.lock")
	held, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, c.script, "up") // #nosec G204 -- the repository's own script
	cmd.Env = c.env
	cmd.ExtraFiles = []*os.File{held} // fd 3 in up, as the harness's lock is fd 9 in it
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/patroni up: %v\n%s", err, out)
	}
	_ = held.Close()
	again, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if err := syscall.Flock(int(again.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Errorf("the caller's lock is still held after up returned and the caller closed it (a daemon inherited it): %v", err)
	}
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
