package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of three primaries with one replica each, made
// with `redis-cli --cluster create`, owned by one test and killed at its
// cleanup. Its nodes use the first six ports of REDIS_HA_PORTS and live in
// REDIS_HA_DIR/cluster.
type Cluster struct {
	t     testing.TB
	Nodes []*Node
}

// StartCluster starts the six nodes, joins them into a cluster and waits
// until every node reports all 16384 slots served and a ClusterClient sees
// three primaries. It fails the test with a hint when a node cannot start
// or the cluster does not form.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	dir := haDir(t, "cluster")
	c := &Cluster{t: t}
	addrs := make([]string, 6)
	for i := range 6 {
		n := newNode(t, dir, fmt.Sprintf("node-%d", i), haPort(t, i), append(dataArgs(),
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "3000")...)
		n.Start()
		c.Nodes = append(c.Nodes, n)
		addrs[i] = n.Addr()
	}
	if t.Failed() {
		t.FailNow()
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	out, err := exec.Command("redis-cli", args...).CombinedOutput() // #nosec G204 -- the test's own addresses
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, n := range c.Nodes {
		rdb := n.Client()
		waitFor(t, 30*time.Second, "cluster state ok on "+n.Addr(), func(ctx context.Context) error {
			info, err := rdb.ClusterInfo(ctx).Result()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
				return fmt.Errorf("CLUSTER INFO: %s", info)
			}
			// Every node starts as a primary; wait until this node's view
			// has the roles that --cluster create assigned.
			nodes, err := rdb.ClusterNodes(ctx).Result()
			if err != nil {
				return err
			}
			masters, replicas := 0, 0
			for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
				f := strings.Fields(line)
				switch {
				case len(f) < 3:
				case strings.Contains(f[2], "master"):
					masters++
				case strings.Contains(f[2], "slave"):
					replicas++
				}
			}
			if masters != 3 || replicas != 3 {
				return fmt.Errorf("CLUSTER NODES shows %d primaries and %d replicas:\n%s", masters, replicas, nodes)
			}
			return nil
		})
	}
	cc := c.Client()
	waitFor(t, 30*time.Second, "three primaries with one replica each", func(ctx context.Context) error {
		shards, err := cc.ClusterShards(ctx).Result()
		if err != nil {
			return err
		}
		if len(shards) != 3 {
			return fmt.Errorf("%d shards", len(shards))
		}
		for _, s := range shards {
			if len(s.Nodes) != 2 {
				return fmt.Errorf("shard %v has %d nodes", s.Slots, len(s.Nodes))
			}
		}
		return nil
	})
	return c
}

// Addrs returns every node's address.
func (c *Cluster) Addrs() []string {
	a := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		a[i] = n.Addr()
	}
	return a
}

// Client returns a ClusterClient of every node with ContextTimeoutEnabled,
// closed at cleanup.
func (c *Cluster) Client() *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ContextTimeoutEnabled: true})
	c.t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// Node returns the node listening on addr, or nil.
func (c *Cluster) Node(addr string) *Node {
	for _, n := range c.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}
