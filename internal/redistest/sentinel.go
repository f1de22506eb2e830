package redistest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the name the sentinels monitor the primary under.
const SentinelMaster = "oncepay"

// Sentinel is one primary, one replica and three sentinels (quorum 2),
// owned by one test and killed at its cleanup. It uses the five ports from
// the eleventh of REDIS_HA_PORTS on and lives in REDIS_HA_DIR/sentinel.
// Sentinels declare a primary down after 1s without an answer and fail
// over to the replica.
type Sentinel struct {
	t         testing.TB
	Data      []*Node // the primary and the replica as started; roles change on failover
	Sentinels []*Node
}

// StartSentinel starts the primary, the replica (replicating) and the three
// sentinels, and waits until every sentinel knows the primary, its replica
// and the two other sentinels. It fails the test with a hint otherwise.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	dir := haDir(t, "sentinel")
	s := &Sentinel{t: t}
	primary := newNode(t, dir, "data-0", haPort(t, 10), dataArgs()...)
	replica := newNode(t, dir, "data-1", haPort(t, 11),
		append(dataArgs(), "--replicaof", "127.0.0.1", fmt.Sprint(haPort(t, 10)))...)
	s.Data = []*Node{primary, replica}
	primary.Start()
	replica.Start()
	for i := range 3 {
		// A sentinel rewrites its configuration file, so it gets one.
		port := haPort(t, 12+i)
		d := filepath.Join(dir, fmt.Sprintf("sentinel-%d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		conf := filepath.Join(d, "sentinel.conf")
		body := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 2\n"+
			"sentinel down-after-milliseconds %[1]s 1000\n"+
			"sentinel failover-timeout %[1]s 10000\n"+
			"sentinel parallel-syncs %[1]s 1\n", SentinelMaster, primary.port)
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		n := newNode(t, dir, fmt.Sprintf("sentinel-%d", i), port, conf, "--sentinel")
		n.Start()
		s.Sentinels = append(s.Sentinels, n)
	}
	if t.Failed() {
		t.FailNow()
	}
	rc := replica.Client()
	waitFor(t, 30*time.Second, "replica in sync", func(ctx context.Context) error {
		info, err := rc.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("INFO replication: %s", info)
		}
		return nil
	})
	for _, n := range s.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: n.Addr()})
		t.Cleanup(func() { _ = sc.Close() })
		waitFor(t, 30*time.Second, "sentinel "+n.Addr()+" knows the topology", func(ctx context.Context) error {
			m, err := sc.Master(ctx, SentinelMaster).Result()
			if err != nil {
				return err
			}
			if m["num-slaves"] != "1" || m["num-other-sentinels"] != "2" || m["flags"] != "master" {
				return fmt.Errorf("SENTINEL MASTER: %v", m)
			}
			return nil
		})
	}
	return s
}

// SentinelAddrs returns the sentinels' addresses.
func (s *Sentinel) SentinelAddrs() []string {
	a := make([]string, len(s.Sentinels))
	for i, n := range s.Sentinels {
		a[i] = n.Addr()
	}
	return a
}

// Client returns go-redis's failover client (it asks the sentinels for the
// primary and follows failovers), with ContextTimeoutEnabled, closed at
// cleanup.
func (s *Sentinel) Client() *redis.Client {
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:            SentinelMaster,
		SentinelAddrs:         s.SentinelAddrs(),
		ContextTimeoutEnabled: true,
	})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Primary returns the data node the sentinels now name as primary.
func (s *Sentinel) Primary(ctx context.Context) (*Node, error) {
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinels[0].Addr()})
	defer sc.Close()
	hp, err := sc.GetMasterAddrByName(ctx, SentinelMaster).Result()
	if err != nil {
		return nil, err
	}
	addr := strings.Join(hp, ":")
	for _, n := range s.Data {
		if n.Addr() == addr {
			return n, nil
		}
	}
	return nil, fmt.Errorf("sentinels name %s, not one of the data nodes", addr)
}

// Replica returns the data node that is not Primary.
func (s *Sentinel) Replica(ctx context.Context) (*Node, error) {
	p, err := s.Primary(ctx)
	if err != nil {
		return nil, err
	}
	if p == s.Data[0] {
		return s.Data[1], nil
	}
	return s.Data[0], nil
}

// WaitPrimary waits until every sentinel names another primary than old and
// that node answers as a primary (INFO replication role:master).
func (s *Sentinel) WaitPrimary(old *Node, d time.Duration) *Node {
	s.t.Helper()
	var now *Node
	waitFor(s.t, d, "failover away from "+old.Addr(), func(ctx context.Context) error {
		p, err := s.Primary(ctx)
		if err != nil {
			return err
		}
		if p == old {
			return fmt.Errorf("sentinels still name %s", old.Addr())
		}
		c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1})
		defer c.Close()
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "role:master") {
			return fmt.Errorf("%s is not a primary yet", p.Addr())
		}
		now = p
		return nil
	})
	return now
}
