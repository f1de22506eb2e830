package container

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/fault"
)

// fakeCluster is a stateNodes with a Redis Cluster of three primaries
// (r0-r2, one third of the slots each) and their replicas (r3-r5), and
// three RabbitMQ nodes. It records every step and plays a failover: the
// node taken down refuses, its replica is promoted after refuseProbes
// probe writes, the node returns as that replica's replica.
type fakeCluster struct {
	mu           sync.Mutex
	steps        []string
	isDown       map[string]bool
	killed       map[string]bool // ever taken down
	promoted     bool
	refuseProbes int
	leader       string // rabbitmq: the leader's host
	leaderLooks  int    // looks at the leader before a new one is elected
	noRelease    bool   // the runtime starts the node again by itself
}

var fakeIDs = map[string]string{"redis-0": "id0", "redis-1": "id1", "redis-2": "id2", "redis-3": "id3", "redis-4": "id4", "redis-5": "id5"}

func (c *fakeCluster) record(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.steps = append(c.steps, s)
}

func (c *fakeCluster) nodes(ctx context.Context, service string) ([]node, error) {
	if service == "rabbitmq" {
		return []node{{Name: "rabbitmq-0", Host: "p-rabbitmq-0", Ref: "p-rabbitmq-0"}, {Name: "rabbitmq-1", Host: "p-rabbitmq-1", Ref: "p-rabbitmq-1"},
			{Name: "rabbitmq-2", Host: "p-rabbitmq-2", Ref: "p-rabbitmq-2"}}, nil
	}
	var out []node
	for i := range 6 {
		out = append(out, node{Name: fmt.Sprintf("redis-%d", i), Ref: fmt.Sprintf("p-redis-%d", i)})
	}
	return out, nil
}

func (c *fakeCluster) clusterNodes() string {
	// redis-1 (slots 5461-10922) fails over to redis-4
	p1, r4 := "master", "slave"
	if c.promoted {
		p1, r4 = "slave", "master"
	}
	if c.isDown["redis-1"] && !c.promoted {
		p1 = "master,fail"
	}
	lines := []string{
		"id0 10.0.0.0:6379@16379 master - 0 0 1 connected 0-5460",
		"id1 10.0.0.1:6379@16379 " + p1 + " - 0 0 2 connected 5461-10922",
		"id2 10.0.0.2:6379@16379,redis-2 myself,master - 0 0 3 connected 10923-16383 [16000->-id0]",
		"id3 a:1@2 slave id0 0 0 1 connected",
		"id4 a:1@2 " + r4 + " id1 0 0 2 connected",
		"id5 a:1@2 slave id2 0 0 3 connected",
	}
	if c.promoted {
		lines[1] = "id1 a:1@2 slave id4 0 0 2 connected"
		lines[4] = "id4 a:1@2 master - 0 0 4 connected 5461-10922"
	}
	return strings.Join(lines, "\n") + "\n"
}

func (c *fakeCluster) exec(ctx context.Context, service string, n node, argv ...string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isDown[n.Name] {
		return nil, fmt.Errorf("%s is down", n.Name)
	}
	if service == "rabbitmq" {
		want := "timeout 30 rabbitmq-queues -q quorum_status payments.charge --formatter json"
		if got := strings.Join(argv, " "); got != want {
			return nil, fmt.Errorf("unexpected %q", got)
		}
		c.leaderLooks--
		if c.killed[c.leaderName()] && c.leaderLooks <= 0 {
			c.leader = "p-rabbitmq-2"
		}
		// a member that is down has a list for its state, as rabbitmq-queues prints it
		var down string
		for name, d := range c.isDown {
			if d && strings.Contains(name, "rabbitmq") {
				down += `,{"Node Name":"rabbit@` + name + `.h.ns.svc.cluster.local","Raft State":["nodedown","rabbit@` + name + `.h.ns.svc.cluster.local"]}`
			}
		}
		if c.killed[c.leaderName()] {
			return []byte(`[{"Node Name":"rabbit@p-rabbitmq-0.h.ns.svc.cluster.local","Raft State":"follower"}` + down + `]`), nil
		}
		return []byte(`[{"Node Name":"rabbit@p-rabbitmq-0.h.ns.svc.cluster.local","Raft State":"follower"},` +
			`{"Node Name":"rabbit@` + c.leader + `.h.ns.svc.cluster.local","Raft State":"leader"}` + down + `]`), nil
	}
	if len(argv) < 3 || argv[0] != "timeout" || argv[2] != "redis-cli" {
		return nil, fmt.Errorf("unexpected %q", argv)
	}
	cmd := strings.Join(argv[3:], " ")
	switch {
	case cmd == "cluster myid":
		return []byte(fakeIDs[n.Name] + "\n"), nil
	case cmd == "cluster nodes":
		return []byte(c.clusterNodes()), nil
	case cmd == "randomkey":
		return []byte("idem:{m1:k42}\n"), nil
	case cmd == "cluster keyslot idem:{m1:k42}":
		return []byte("7000\n"), nil
	case strings.HasPrefix(cmd, "-c set {m1:k42}:oncepay-probe 1 px 60000"):
		c.steps = append(c.steps, "probe via "+n.Name)
		if c.refuseProbes--; c.refuseProbes >= 0 {
			return nil, fmt.Errorf("CLUSTERDOWN")
		}
		c.promoted = true
		return []byte("OK\n"), nil
	case cmd == "role":
		if c.promoted {
			return []byte("slave\nredis-4\n"), nil
		}
		return []byte("master\n"), nil
	}
	return nil, fmt.Errorf("unexpected redis-cli %q", cmd)
}

func (c *fakeCluster) leaderName() string {
	return "rabbitmq-" + c.leader[len(c.leader)-1:]
}

func (c *fakeCluster) markDown(n node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isDown == nil {
		c.isDown, c.killed = map[string]bool{}, map[string]bool{}
	}
	c.isDown[n.Name], c.killed[n.Name] = true, true
}

func (c *fakeCluster) down(ctx context.Context, service string, n node) (func(context.Context) error, error) {
	c.record("down " + n.Name)
	c.markDown(n)
	up := func(context.Context) error {
		c.record("release " + n.Name)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.isDown[n.Name] = false
		return nil
	}
	if c.noRelease {
		_ = up(ctx)
		return nil, nil
	}
	return up, nil
}

func (c *fakeCluster) back(ctx context.Context, service, name string, old node) (node, error) {
	c.record("back " + name)
	return old, nil
}

// fakeClock makes the failover's waits instant and its times exact.
func fakeFailover(rt stateNodes) *failover {
	f := newFailover(rt)
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	f.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return t }
	f.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(d)
		return nil
	}
	return f
}

func TestFailoverRedis(t *testing.T) {
	t.Parallel()
	c := &fakeCluster{refuseProbes: 30}
	cost, err := fakeFailover(c).FailoverRedis(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := fault.Cost{Node: "redis-1", Slot: 7000, RefusedMS: 6000, Detail: "slot 7000 now on redis-4; redis-1 is a slave again after 6s"}
	if diff := cmp.Diff(want, cost); diff != "" {
		t.Errorf("cost (-want +got):\n%s", diff)
	}
	// down, 31 probes through a primary other than redis-1, release, back
	var probes []string
	var rest []string
	for _, s := range c.steps {
		if strings.HasPrefix(s, "probe via ") {
			probes = append(probes, s)
			continue
		}
		rest = append(rest, s)
	}
	if diff := cmp.Diff([]string{"down redis-1", "release redis-1", "back redis-1"}, rest); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if len(probes) != 31 || probes[0] == "probe via redis-1" {
		t.Errorf("probes %v: want 31, through a live primary", probes)
	}
}

func TestFailoverRedisNoTakeover(t *testing.T) {
	t.Parallel()
	c := &fakeCluster{refuseProbes: 1 << 30}
	cost, err := fakeFailover(c).FailoverRedis(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no replica took slot 7000 over") {
		t.Errorf("err = %v, want no takeover", err)
	}
	if cost.RefusedMS != -1 || cost.Node != "redis-1" {
		t.Errorf("cost %+v: want redis-1, RefusedMS -1", cost)
	}
	// the node is let back even so
	if !strings.Contains(strings.Join(c.steps, ","), "release redis-1") {
		t.Errorf("steps %v: redis-1 never released", c.steps)
	}
}

func TestKillQueueLeader(t *testing.T) {
	t.Parallel()
	c := &fakeCluster{leader: "p-rabbitmq-1", leaderLooks: 4}
	cost, err := fakeFailover(c).KillQueueLeader(context.Background(), fault.ChargeQueue, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// looks every 2 s: the second round after the kill sees rabbitmq-2 lead
	want := fault.Cost{Node: "rabbitmq-1", RefusedMS: 2000, Detail: "new leader rabbitmq-2; rabbitmq-1 back after 15s"}
	if diff := cmp.Diff(want, cost); diff != "" {
		t.Errorf("cost (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"down rabbitmq-1", "release rabbitmq-1", "back rabbitmq-1"}, c.steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

// TestKillQueueLeaderRestartedByTheRuntime: where the runtime starts the
// node again itself (a StatefulSet), down is not waited for.
func TestKillQueueLeaderRestartedByTheRuntime(t *testing.T) {
	t.Parallel()
	c := &fakeCluster{leader: "p-rabbitmq-0", leaderLooks: 2, noRelease: true}
	cost, err := fakeFailover(c).KillQueueLeader(context.Background(), fault.ChargeQueue, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if cost.Node != "rabbitmq-0" || cost.RefusedMS < 0 || !strings.HasSuffix(cost.Detail, "back after 0s") {
		t.Errorf("cost %+v", cost)
	}
}

func TestParseClusterNodes(t *testing.T) {
	t.Parallel()
	got := parseClusterNodes("id2 h:1@2,name myself,master - 0 0 3 connected 10923-16000 16383 [16001->-id0]\nid5 h:1@2 slave,fail id2 0 0 3 disconnected\n")
	want := []clusterNode{
		{ID: "id2", Master: "-", Addr: "h:1", Primary: true, Slots: [][2]int{{10923, 16000}, {16383, 16383}}},
		{ID: "id5", Master: "id2", Addr: "h:1", Failed: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for key, want := range map[string]string{"idem:{m1:k}:x": "{m1:k}:oncepay-probe", "plain": "{plain}:oncepay-probe", "a{}b": "{a{}b}:oncepay-probe"} {
		if got := probeKey(key); got != want {
			t.Errorf("probeKey(%q) = %q, want %q", key, got, want)
		}
	}
}

// TestKubeFailoverSteps: on Kubernetes a Redis node is frozen from the
// host, then killed and its pod deleted once released; a RabbitMQ node is
// killed and its pod deleted at once; commands run in the pod's container.
func TestKubeFailoverSteps(t *testing.T) {
	t.Parallel()
	k := NewKube(KubeConfig{KillMode: KillSIGKILLDelete})
	var steps []string
	k.run = func(ctx context.Context, args ...string) ([]byte, error) {
		steps = append(steps, "kubectl "+strings.Join(args, " "))
		return nil, nil
	}
	k.statePID = func(p pod, programs []string) (int, error) {
		steps = append(steps, fmt.Sprintf("pid of %s in %s %s", strings.Join(programs, "|"), p.Metadata.Name, p.Metadata.UID))
		return 42, nil
	}
	k.freeze = func(pid int, _ time.Duration) error { steps = append(steps, fmt.Sprint("freeze ", pid)); return nil }
	k.kill = func(pid int, _ time.Duration) error { steps = append(steps, fmt.Sprint("kill ", pid)); return nil }
	n := kubeNodes{k}
	ctx := context.Background()
	redis := node{Name: "redis-1", Ref: "oncepay-redis-1", UID: "u1"}
	release, err := n.down(ctx, "redis", redis)
	if err != nil || release == nil {
		t.Fatalf("down(redis) = %v, %v; want a release", release != nil, err)
	}
	if err := release(ctx); err != nil {
		t.Fatal(err)
	}
	if release, err := n.down(ctx, "rabbitmq", node{Name: "rabbitmq-2", Ref: "oncepay-rabbitmq-2", UID: "u2"}); err != nil || release != nil {
		t.Fatalf("down(rabbitmq) = %v, %v; want no release", release != nil, err)
	}
	if _, err := n.exec(ctx, "redis", redis, "redis-cli", "role"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pid of redis-server|redis-check-rdb in oncepay-redis-1 u1", "freeze 42",
		"kill 42", "kubectl delete pod oncepay-redis-1 --grace-period=0 --force --wait=false",
		"pid of beam.smp in oncepay-rabbitmq-2 u2", "kill 42",
		"kubectl delete pod oncepay-rabbitmq-2 --grace-period=0 --force --wait=false",
		"kubectl exec oncepay-redis-1 -c redis -- redis-cli role",
	}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

// TestDockerFailoverSteps: compose nodes are the service and its -N
// siblings; a node is docker-killed and started again on release.
func TestDockerFailoverSteps(t *testing.T) {
	t.Parallel()
	d := NewDocker(DockerConfig{Project: "oncepay"})
	var steps []string
	d.run = func(ctx context.Context, args ...string) ([]byte, error) {
		steps = append(steps, "docker "+strings.Join(args, " "))
		if args[0] == "ps" {
			return []byte("c1 redis\nc2 redis-2\nc9 redis-exporter\nc3 rabbitmq-2\nc4 api-1\n"), nil
		}
		return nil, nil
	}
	n := dockerNodes{d}
	ctx := context.Background()
	nodes, err := n.nodes(ctx, "redis")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]node{{Name: "redis", Host: "redis", Ref: "c1"}, {Name: "redis-2", Host: "redis-2", Ref: "c2"}}, nodes); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	release, err := n.down(ctx, "redis", nodes[1])
	if err != nil || release == nil {
		t.Fatalf("down = %v, %v", release != nil, err)
	}
	if err := release(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`docker ps --no-trunc --format {{.ID}} {{.Label "com.docker.compose.service"}} --filter label=com.docker.compose.project=oncepay`,
		"docker kill c2", "docker start c2",
	}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

// TestKubeRestartServiceRollsEveryPod: the ha topology's six Redis pods
// are restarted one after another (it used to refuse: "6 pods running,
// want 1").
func TestKubeRestartServiceRollsEveryPod(t *testing.T) {
	t.Parallel()
	k := NewKube(KubeConfig{ReadyTimeout: 5 * time.Second})
	uid := map[string]string{"oncepay-redis-0": "a", "oncepay-redis-1": "b", "oncepay-redis-2": "c"}
	var deleted []string
	k.run = func(ctx context.Context, args ...string) ([]byte, error) {
		switch args[0] {
		case "delete":
			deleted = append(deleted, args[2])
			uid[args[2]] += "'"
			return nil, nil
		case "get":
			var items []string
			for _, name := range []string{"oncepay-redis-0", "oncepay-redis-1", "oncepay-redis-2"} {
				items = append(items, fmt.Sprintf(`{"metadata":{"name":%q,"uid":%q},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`, name, uid[name]))
			}
			return []byte(`{"items":[` + strings.Join(items, ",") + `]}`), nil
		}
		return nil, fmt.Errorf("unexpected %v", args)
	}
	if err := k.RestartService(context.Background(), "redis"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"oncepay-redis-0", "oncepay-redis-1", "oncepay-redis-2"}, deleted); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
}

// TestMigrateSlot runs MigrateSlot's scripts in bash against a fake
// redis-cli that logs what it is sent: SETSLOT IMPORTING on the target,
// MIGRATING and the key MIGRATEs (with AUTH) on the source, then SETSLOT
// NODE on every primary.
func TestMigrateSlot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// the first GETKEYSINSLOT round finds two keys, the next none
	cli := `#!/bin/bash
while IFS= read -r line; do
  echo "$NODE $line" >>` + dir + `/log
  case $line in
  "CLUSTER GETKEYSINSLOT 7000 1000") if [ ! -e ` + dir + `/round ]; then echo 'idem:{m1:k42}'; echo 'lease:{m1:k42}'; fi ;;
  "CLUSTER GETKEYSINSLOT 7255 1000") touch ` + dir + `/round ;;
  "CLUSTER GETKEYSINSLOT "*) ;;
  *) echo OK ;;
  esac
done
`
	if err := os.WriteFile(filepath.Join(dir, "redis-cli"), []byte(cli), 0o755); err != nil {
		t.Fatal(err)
	}
	c := &fakeCluster{}
	rt := &scriptNodes{fakeCluster: c, path: dir + ":" + os.Getenv("PATH")}
	f := fakeFailover(rt)
	cost, err := f.MigrateSlot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cost.Node != "redis-1" || cost.Slot != 7000 || cost.Slots != 256 || cost.Keys != 2 || !strings.HasPrefix(cost.Detail, "slots 7000-7255 from redis-1 to redis-") {
		t.Errorf("cost %+v", cost)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "log"))
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	dst := cost.Detail[strings.Index(cost.Detail, " to ")+4:]
	dst = dst[:strings.IndexByte(dst, ' ')]
	dstID := fakeIDs[dst]
	count := map[string]int{}
	for _, l := range lines {
		f := strings.Fields(l)
		count[f[0]+" "+strings.Join(f[1:4], " ")]++
	}
	for k, want := range map[string]int{
		dst + " CLUSTER SETSLOT 7000":        2, // IMPORTING, NODE
		"redis-1 CLUSTER SETSLOT 7255":       2, // MIGRATING, NODE
		"redis-1 CLUSTER GETKEYSINSLOT 7000": 2, // two rounds
	} {
		if count[k] != want {
			t.Errorf("%q sent %d times, want %d (log:\n%s)", k, count[k], want, log)
		}
	}
	for _, want := range []string{
		dst + " CLUSTER SETSLOT 7000 IMPORTING id1",
		"redis-1 CLUSTER SETSLOT 7000 MIGRATING " + dstID,
		`redis-1 MIGRATE 10.0.0.` + dstID[2:] + ` 6379 "idem:{m1:k42}" 0 10000 AUTH s3cret`,
		"redis-0 CLUSTER SETSLOT 7255 NODE " + dstID,
	} {
		if !strings.Contains(string(log), want+"\n") {
			t.Errorf("redis-cli was not sent %q; log:\n%s", want, log)
		}
	}
}

// scriptNodes runs the bash scripts a fakeCluster is asked to exec, with
// NODE naming the node and a fake redis-cli first on PATH.
type scriptNodes struct {
	*fakeCluster
	path string
}

func (s *scriptNodes) exec(ctx context.Context, service string, n node, argv ...string) ([]byte, error) {
	if argv[0] != "bash" {
		return s.fakeCluster.exec(ctx, service, n, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + s.path, "NODE=" + n.Name, "REDISCLI_AUTH=s3cret"}
	return cmd.Output()
}

func TestOldest(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for pid, start := range map[int]string{10: "500", 11: "90", 12: "300"} {
		dir := filepath.Join(root, strconv.Itoa(pid))
		os.MkdirAll(dir, 0o755)
		// pid (comm) state ppid ... field 22 is the start time
		stat := fmt.Sprintf("%d (beam.smp) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %s 0 0", pid, start)
		os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644)
	}
	if got := oldest(root, []int{10, 11, 12}); got != 11 {
		t.Errorf("oldest = %d, want 11", got)
	}
}

// TestDockerPartitionQueueLeader: the node leading the queue is
// disconnected from its network for the fault's duration and connected
// again with its aliases (not its container id's), and the new leader is
// found on the other nodes meanwhile.
func TestDockerPartitionQueueLeader(t *testing.T) {
	t.Parallel()
	d := NewDocker(DockerConfig{Project: "oncepay"})
	var steps []string
	cut := false
	d.run = func(ctx context.Context, args ...string) ([]byte, error) {
		step := strings.Join(args, " ")
		switch {
		case args[0] == "ps":
			return []byte("aaaaaaaaaaaa1 rabbitmq\nbbbbbbbbbbbb2 rabbitmq-2\ncccccccccccc3 rabbitmq-3\ndddddddddddd4 worker-1\n"), nil
		case args[0] == "exec":
			leader := "rabbitmq-2"
			if cut {
				leader = "rabbitmq-3"
			}
			return fmt.Appendf(nil, `[{"Node Name":"rabbit@%s","Raft State":"leader"}]`, leader), nil
		case step == "inspect -f {{json .NetworkSettings.Networks}} bbbbbbbbbbbb2":
			steps = append(steps, "docker "+step)
			return []byte(`{"oncepay_default":{"Aliases":["oncepay-rabbitmq-2-1","rabbitmq-2","bbbbbbbbbbbb"]}}`), nil
		case args[0] == "inspect":
			return []byte("healthy\n"), nil
		case args[0] == "network" && args[1] == "disconnect":
			cut = true
		case args[0] == "network" && args[1] == "connect":
			cut = false
		}
		steps = append(steps, "docker "+step)
		return nil, nil
	}
	c, err := d.partitionQueueLeader(context.Background(), fakeFailover(dockerNodes{d}), fault.ChargeQueue, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"docker inspect -f {{json .NetworkSettings.Networks}} bbbbbbbbbbbb2",
		"docker network disconnect oncepay_default bbbbbbbbbbbb2",
		"docker network connect --alias oncepay-rabbitmq-2-1 --alias rabbitmq-2 oncepay_default bbbbbbbbbbbb2",
	}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if c.Node != "rabbitmq-2" || c.RefusedMS != 0 || !strings.Contains(c.Detail, "cut off for 20s; new leader rabbitmq-3") {
		t.Errorf("cost = %+v, want rabbitmq-2 cut off, rabbitmq-3 the new leader at once", c)
	}
}

// TestKubePartitionQueueLeader: the pod leading the queue is cut off inside
// its network namespace (every packet not on loopback dropped both ways)
// for the fault's duration, the new leader is found on the other pods
// meanwhile, and the rules are deleted again before the pod's readiness is
// waited for. Without host access the fault is unsupported.
func TestKubePartitionQueueLeader(t *testing.T) {
	t.Parallel()
	k := NewKube(KubeConfig{KillMode: KillSIGKILLDelete, ReadyTimeout: 5 * time.Second})
	var steps []string
	cut := false
	k.run = func(ctx context.Context, args ...string) ([]byte, error) {
		switch args[0] {
		case "get":
			var items []string
			for i, name := range []string{"oncepay-rabbitmq-0", "oncepay-rabbitmq-1", "oncepay-rabbitmq-2"} {
				items = append(items, fmt.Sprintf(`{"metadata":{"name":%q,"uid":"u%d"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":%q}]}}`,
					name, i, map[bool]string{true: "True", false: "False"}[!cut || i != 1]))
			}
			return []byte(`{"items":[` + strings.Join(items, ",") + `]}`), nil
		case "exec":
			leader := "oncepay-rabbitmq-1"
			if cut {
				leader = "oncepay-rabbitmq-2"
			}
			return fmt.Appendf(nil, `[{"Node Name":"rabbit@%s.oncepay-rabbitmq-headless","Raft State":"leader"}]`, leader), nil
		}
		return nil, fmt.Errorf("unexpected %v", args)
	}
	k.statePID = func(p pod, programs []string) (int, error) {
		steps = append(steps, fmt.Sprintf("pid of %s in %s %s", strings.Join(programs, "|"), p.Metadata.Name, p.Metadata.UID))
		return 42, nil
	}
	k.iptables = func(ctx context.Context, pid int, args ...string) error {
		steps = append(steps, fmt.Sprintf("%d: iptables %s", pid, strings.Join(args, " ")))
		cut = args[0] == "-I"
		return nil
	}
	c, err := k.partitionQueueLeader(context.Background(), fakeFailover(kubeNodes{k}), fault.ChargeQueue, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pid of beam.smp in oncepay-rabbitmq-1 u1",
		"42: iptables -I INPUT 1 ! -i lo -j DROP",
		"42: iptables -I OUTPUT 1 ! -o lo -j DROP",
		"42: iptables -D INPUT ! -i lo -j DROP",
		"42: iptables -D OUTPUT ! -o lo -j DROP",
	}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if c.Node != "rabbitmq-1" || c.RefusedMS != 0 || !strings.Contains(c.Detail, "cut off for 20s; new leader rabbitmq-2") {
		t.Errorf("cost = %+v, want rabbitmq-1 cut off, rabbitmq-2 the new leader at once", c)
	}

	k.cfg.KillMode = KillDelete
	if _, err := k.PartitionQueueLeader(context.Background(), fault.ChargeQueue, time.Second); !errors.Is(err, fault.ErrUnsupported) {
		t.Errorf("KillMode delete: err = %v, want ErrUnsupported", err)
	}
}

// TestSlotPrimaryServesTheLoadsKey: in a Redis Cluster the stall freezes
// the primary serving a key the load uses (slot 7000: redis-1), and after
// a failover the replica that took the slot over.
func TestSlotPrimaryServesTheLoadsKey(t *testing.T) {
	t.Parallel()
	c := &fakeCluster{}
	n, err := fakeFailover(c).slotPrimary(context.Background())
	if err != nil || n.Name != "redis-1" {
		t.Fatalf("slotPrimary = %q, %v; want redis-1", n.Name, err)
	}
	c.promoted = true
	n, err = fakeFailover(c).slotPrimary(context.Background())
	if err != nil || n.Name != "redis-4" {
		t.Fatalf("after the failover: slotPrimary = %q, %v; want redis-4", n.Name, err)
	}
}
