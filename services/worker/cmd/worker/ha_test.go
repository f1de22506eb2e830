package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/loadtest/netfault"
)

// The tests of this file run the worker on the HA topologies: a Redis
// Cluster or Sentinel setup of internal/redistest (REDIS_MODE), and
// AMQP_URL listing several nodes. They are not parallel: the Cluster and
// the Sentinel setup use the fixed REDIS_HA_PORTS.

// clusterURL is REDIS_URL for REDIS_MODE=cluster: three seed nodes.
func clusterURL(c *redistest.Cluster) string {
	a := c.Addrs()
	return "redis://" + a[0] + "?addr=" + a[1] + "&addr=" + a[2]
}

// sentinelURL is REDIS_URL for REDIS_MODE=sentinel: the three sentinels.
func sentinelURL(s *redistest.Sentinel) string {
	a := s.SentinelAddrs()
	return "redis://" + a[0] + "?addr=" + a[1] + "&addr=" + a[2] + "&master_name=" + redistest.SentinelMaster
}

// withHost returns rawURL with its host:port replaced by addr.
func withHost(t testing.TB, rawURL, addr string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = addr
	return u.String()
}

// deadAddr returns a local address nothing listens on.
func deadAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

// publishAll creates n payments and publishes each message twice (a
// duplicate delivery, as a relay republish makes), every gap, and returns
// their ids. after, if not nil, runs once half of them are out.
func (e *env) publishAll(n int, gap time.Duration, after func()) []string {
	e.t.Helper()
	var ids []string
	for i := range n {
		if i == n/2 && after != nil {
			after()
		}
		p := e.newPayment(int64(1000+i), fmt.Sprintf("cus_ha_%d", i))
		e.publish(e.message(p), 2)
		ids = append(ids, p.ID)
		time.Sleep(gap)
	}
	return ids
}

// Two workers on a Redis Cluster: every payment, delivered twice, is
// charged once, and the boundary's records live in the cluster.
func TestClusterChargesOnce(t *testing.T) {
	e := newEnv(t, nil)
	c := redistest.StartCluster(t)
	ha := map[string]string{"REDIS_MODE": "cluster", "REDIS_URL": clusterURL(c)}
	e.startWorker("worker-a", ha)
	e.startWorker("worker-b", ha)
	ids := e.publishAll(20, 0, nil)
	e.waitTerminal(60*time.Second, ids...)
	e.wantChargedOnce(ids...)

	rows, err := e.db.Query(context.Background(), `SELECT idempotency_key FROM payments WHERE id = ANY($1)`, ids)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for rows.Next() {
		var k string
		_ = rows.Scan(&k)
		keys = append(keys, k)
	}
	rows.Close()
	cc := c.Client()
	for _, k := range keys {
		hash := "idem:v1:{" + e.merchant + ":" + k + "}"
		if s, err := cc.HGet(context.Background(), hash, "charge:state").Result(); err != nil || s != "C" {
			t.Errorf("%s in the cluster: charge:state %q, %v; want C", hash, s, err)
		}
	}
}

// End to end on a Redis Cluster: the api (its boundary and its outbox
// publisher, AMQP_URL with a dead node first) and the worker share the
// cluster; every payment, posted twice under its key, is created once
// and charged once.
func TestClusterEndToEnd(t *testing.T) {
	e := newEnv(t, nil)
	c := redistest.StartCluster(t)
	ha := map[string]string{"REDIS_MODE": "cluster", "REDIS_URL": clusterURL(c),
		"AMQP_URL": withHost(t, e.amqpURL, deadAddr(t)) + "," + e.amqpURL}
	api := e.startAPI(ha)
	e.startWorker("worker-a", ha)
	var ids []string
	for i := range 10 {
		key := fmt.Sprintf("ha-e2e-%d", i)
		id := api.pay(t, key, int64(100+i))
		if again := api.pay(t, key, int64(100+i)); again != id {
			t.Errorf("key %s: the replay answered payment %q, the first %q", key, again, id)
		}
		ids = append(ids, id)
	}
	e.waitTerminal(60*time.Second, ids...)
	e.wantChargedOnce(ids...)
}

// A Sentinel failover under the worker: the primary is killed while
// payments arrive, the sentinels promote the replica, the worker's
// failover client follows, and nothing is charged twice.
func TestSentinelFailoverChargesOnce(t *testing.T) {
	e := newEnv(t, nil)
	s := redistest.StartSentinel(t)
	w := e.startWorker("worker-a", map[string]string{"REDIS_MODE": "sentinel", "REDIS_URL": sentinelURL(s)})
	var old *redistest.Node
	var killedAt time.Time
	// payments keep arriving while the sentinels fail over
	ids := e.publishAll(40, 100*time.Millisecond, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		if old, err = s.Primary(ctx); err != nil {
			t.Fatal(err)
		}
		old.Kill()
		killedAt = time.Now()
	})
	now := s.WaitPrimary(old, 30*time.Second)
	t.Logf("primary %s killed; %s promoted", old.Addr(), now.Addr())
	e.waitTerminal(90*time.Second, ids...)
	e.wantChargedOnce(ids...)
	down := w.metric(t, outcome("redis_unavailable"))
	t.Logf("charged %v, duplicates %v, refused while Redis was failing over %v (killed %s before the end)",
		w.metric(t, outcome("charged")), w.metric(t, outcome("duplicate")), down, time.Since(killedAt).Round(100*time.Millisecond))
	if down == 0 {
		t.Errorf("no delivery met the failover: it did not land under load")
	}
}

// AMQP_URL lists a node that is down and the harness broker: the worker
// connects through the live one and charges.
func TestAMQPListSkipsDeadNode(t *testing.T) {
	e := newEnv(t, nil)
	e.startWorker("worker-a", map[string]string{"AMQP_URL": withHost(t, e.amqpURL, deadAddr(t)) + "," + e.amqpURL})
	ids := e.publishAll(3, 0, nil)
	e.waitTerminal(30*time.Second, ids...)
	e.wantChargedOnce(ids...)
}

// AMQP_URL lists two Toxiproxy proxies to the one harness broker. Under
// load the proxy in use is switched off (its connections closed, new
// ones refused): the worker's recovery redials through the other one and
// every payment is charged once; none is lost.
func TestAMQPReconnectsThroughNextNode(t *testing.T) {
	e := newEnv(t, nil)
	api := testenv.Toxiproxy(t)
	in := netfault.New(api)
	u, err := url.Parse(e.amqpURL)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for _, name := range []string{"mq-a", "mq-b"} {
		addr, err := in.CreateProxy(name, "amqp", "127.0.0.1:0", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, withHost(t, e.amqpURL, addr))
	}
	w := e.startWorker("worker-a", map[string]string{"AMQP_URL": strings.Join(nodes, ",")})
	ids := e.publishAll(30, 100*time.Millisecond, func() {
		// the first dial goes to the first node: mq-a is the one in use
		disableProxy(t, api, netfault.Name("mq-a", "amqp"))
	})
	e.waitTerminal(60*time.Second, ids...)
	e.wantChargedOnce(ids...)
	if logTime(w.logs, "amqp connection state", `"to":"open"`).IsZero() {
		t.Errorf("the worker never logged its connection open again")
	}
}

// disableProxy switches a Toxiproxy proxy off: it closes its connections
// and refuses new ones.
func disableProxy(t testing.TB, api, name string) {
	t.Helper()
	resp, err := http.Post(api+"/proxies/"+name, "application/json", bytes.NewBufferString(`{"enabled":false}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("disable proxy %s: %s", name, resp.Status)
	}
}
