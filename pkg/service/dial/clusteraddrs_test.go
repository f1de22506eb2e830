package dial

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oncepay/oncepay/internal/redistest"
)

func TestParseClusterAddrs(t *testing.T) {
	for _, c := range []struct {
		in   string
		want map[string]string
		err  string
	}{
		{"", nil, ""},
		{"redis:6379=127.0.0.1:26379, redis-2:6379=127.0.0.1:26382",
			map[string]string{"redis:6379": "127.0.0.1:26379", "redis-2:6379": "127.0.0.1:26382"}, ""},
		{"redis:6379", nil, "pair 1: want announced-host:port=dial-host:port"},
		{"a:1=b:2,redis=127.0.0.1:1", nil, `pair 2: "redis" is not host:port`},
		{"a:1=b:2,a:1=c:3", nil, "pair 2: a:1 is mapped twice"},
	} {
		got, err := ParseClusterAddrs(c.in)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("ParseClusterAddrs(%q) error = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseClusterAddrs(%q): %v", c.in, err)
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("ParseClusterAddrs(%q) (-want +got):\n%s", c.in, d)
		}
	}
}

// A node-address map outside cluster mode is refused, and the error quotes
// no URL.
func TestClusterAddrsClusterOnly(t *testing.T) {
	m := map[string]string{"redis-2:6379": "127.0.0.1:26382"}
	for _, mode := range []string{"", RedisSingle, RedisSentinel} {
		err := CheckRedisTuned(mode, "redis://:s3cret@127.0.0.1:6379?master_name=m", RedisTuning{ClusterAddrs: m})
		if err == nil || !strings.Contains(err.Error(), "for Redis Cluster only") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("mode %q: error %v, want the cluster-only refusal without the URL", mode, err)
		}
	}
	if err := CheckRedisTuned(RedisCluster, "redis://:s3cret@redis:6379", RedisTuning{ClusterAddrs: m}); err != nil {
		t.Errorf("cluster: %v", err)
	}
}

// A real Redis Cluster whose nodes announce names that do not resolve (as
// Compose's container names do not on the host): the client follows its
// slots and redirects through the map, and without the map it fails.
func TestClusterAddrsReachAnnouncedNames(t *testing.T) {
	c := redistest.StartCluster(t)
	ctx := context.Background()
	names := map[string]string{} // announced -> real
	var seeds []string
	for i, n := range c.Nodes {
		host := fmt.Sprintf("node-%d.oncepay.invalid", i)
		rdb := n.Client()
		for _, kv := range [][2]string{{"cluster-announce-hostname", host}, {"cluster-preferred-endpoint-type", "hostname"}} {
			if err := rdb.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
				t.Fatalf("CONFIG SET %s on %s: %v", kv[0], n.Addr(), err)
			}
		}
		_, port, _ := strings.Cut(n.Addr(), ":")
		names[host+":"+port] = n.Addr()
		seeds = append(seeds, host+":"+port)
	}
	// every node names the others by their hostnames (the endpoint that
	// CLUSTER SLOTS and the redirects give) once the gossip has carried them
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range c.Nodes {
		for {
			shards, err := n.Client().ClusterShards(ctx).Result()
			ok := err == nil && len(shards) == 3
			for _, s := range shards {
				for _, sn := range s.Nodes {
					if _, known := names[sn.Endpoint+":"+strconv.FormatInt(sn.Port, 10)]; !known {
						ok = false
					}
				}
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("CLUSTER SHARDS on %s does not name every node by hostname: %v %v", n.Addr(), shards, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	url := "redis://" + seeds[0] + "?addr=" + seeds[1] + "&addr=" + seeds[2] + "&dial_timeout=1s&max_retries=1"

	rdb, err := Redis(RedisCluster, url, RedisTuning{ContextTimeout: true, ClusterAddrs: names})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	for i := range 50 { // keys on every shard
		k := "k{" + strconv.Itoa(i) + "}"
		if err := rdb.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatalf("SET %s through the map: %v", k, err)
		}
		if got, err := rdb.Get(ctx, k).Int(); err != nil || got != i {
			t.Fatalf("GET %s through the map: %d, %v", k, got, err)
		}
	}

	bare, err := Redis(RedisCluster, url, RedisTuning{ContextTimeout: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := bare.Set(tctx, "k{0}", 0, 0).Err(); err == nil {
		t.Error("SET without the map succeeded: the announced names resolve, the test proves nothing")
	}
}
