package dial

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func TestRedisModes(t *testing.T) {
	for _, c := range []struct {
		mode, url string
		want      string // the client's type, or the error's start
	}{
		{"", "redis://127.0.0.1:6379/0", "*redis.Client"},
		{"single", "redis://:pw@127.0.0.1:6379/2?pool_size=7", "*redis.Client"},
		{"cluster", "redis://127.0.0.1:7000?addr=127.0.0.1:7001&addr=127.0.0.1:7002", "*redis.ClusterClient"},
		{"cluster", "redis://127.0.0.1:7000", "*redis.ClusterClient"},
		{"sentinel", "redis://127.0.0.1:26379?addr=127.0.0.1:26380&master_name=boundary", "*redis.Client"},
		{"sentinel", "redis://127.0.0.1:26379", "sentinel mode needs master_name"},
		{"cluster", "redis://127.0.0.1:7000/3", "a Redis Cluster has database 0 only"},
		{"ring", "redis://127.0.0.1:6379", `unknown Redis mode "ring"`},
		{"single", "http://127.0.0.1:6379", "redis: invalid URL scheme"},
		{"single", "redis://u:s3cret@[::1", "not a valid URL (the parse error is not shown"},
	} {
		rdb, err := Redis(c.mode, c.url, RedisTuning{ContextTimeout: true})
		got := ""
		if err != nil {
			got = err.Error()
			if cerr := CheckRedis(c.mode, c.url); cerr == nil || cerr.Error() != got {
				t.Errorf("%s %s: CheckRedis = %v, Redis's error %q", c.mode, c.url, cerr, got)
			}
		} else {
			got = typeName(rdb)
			_ = rdb.Close()
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s %s: got %q, want %q...", c.mode, c.url, got, c.want)
		}
		if strings.Contains(got, "s3cret") {
			t.Errorf("%s: the error quotes the password: %s", c.url, got)
		}
	}
}

func typeName(rdb redis.UniversalClient) string {
	switch rdb.(type) {
	case *redis.ClusterClient:
		return "*redis.ClusterClient"
	case *redis.Client:
		return "*redis.Client"
	}
	return "?"
}

func TestRedisKeepsURLOptions(t *testing.T) {
	rdb, err := Redis("cluster", "redis://127.0.0.1:7000?addr=127.0.0.1:7001&pool_size=9&read_timeout=2s", RedisTuning{ContextTimeout: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	o := rdb.(*redis.ClusterClient).Options()
	if o.PoolSize != 9 || o.ReadTimeout != 2*time.Second || !o.ContextTimeoutEnabled || len(o.Addrs) != 2 {
		t.Errorf("options %+v: want pool 9, read timeout 2s, context timeout, 2 seeds", o)
	}
}

func TestParseAMQP(t *testing.T) {
	for _, c := range []struct{ list, want string }{
		{"amqp://u:p@mq1:5672/", ""},
		{"amqp://u:p@mq1:5672/v, amqp://u:p@mq2:5673/v", ""},
		{"http://mq1", "AMQP scheme must be"},
		{"amqp://u:p@mq1/,", "URL 2 of the list is empty"},
		{"amqp://u:p@mq1/,amqps://u:p@mq2/", "URL 2 has scheme amqps"},
		{"amqp://u:p@mq1/a,amqp://u:p@mq2/b", `URL 2 names vhost "b"`},
		{"amqp://u:p@mq1/,amqp://u:s3cret@mq2/", "URL 2 has other credentials"},
		{"amqp://u:p@mq1/,amqp://u:s3cret@[::1/", "URL 2 of the list: not a valid URL"},
	} {
		n, err := ParseAMQP(c.list)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.list, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want %q", c.list, err, c.want)
		case err != nil && strings.Contains(err.Error(), "s3cret"):
			t.Errorf("%s: the error quotes the password: %v", c.list, err)
		case err == nil && n.URL() != strings.Split(c.list, ",")[0]:
			t.Errorf("%s: URL() = %q, want the first", c.list, n.URL())
		}
	}
}

// TestAMQPDialRotates checks the rotation on real listeners: a dead node
// is skipped, and each dial starts after the node last reached.
func TestAMQPDialRotates(t *testing.T) {
	var ls []net.Listener
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		ls = append(ls, l)
	}
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	n, err := ParseAMQP("amqp://" + deadAddr + "/,amqp://" + ls[0].Addr().String() + "/,amqp://" + ls[1].Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	d := n.Dial(time.Second)
	var got []string
	for range 4 {
		c, err := d("tcp", "ignored:1")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c.RemoteAddr().String())
		c.Close()
	}
	want := []string{ls[0].Addr().String(), ls[1].Addr().String(), ls[0].Addr().String(), ls[1].Addr().String()}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("dialled %v, want %v (the dead node skipped, the live ones in turn)", got, want)
	}
	ls[0].Close()
	ls[1].Close()
	if _, err := d("tcp", "ignored:1"); err == nil || !strings.Contains(err.Error(), "node 1") || !strings.Contains(err.Error(), "node 3") {
		t.Errorf("every node down: error %v, want every node's", err)
	}
}

// ForEachPrimary reaches every primary of a real Redis Cluster: a FLUSHDB
// through it empties keys of every slot.
func TestForEachPrimaryFlushesEveryShard(t *testing.T) {
	c := redistest.StartCluster(t)
	a := c.Addrs()
	rdb, err := Redis(RedisCluster, "redis://"+a[0]+"?addr="+a[1]+"&addr="+a[2], RedisTuning{ContextTimeout: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx := context.Background()
	for i := range 50 {
		if err := rdb.Set(ctx, "k{"+strconv.Itoa(i)+"}", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var nodes int
	err = ForEachPrimary(ctx, rdb, func(ctx context.Context, n *redis.Client) error {
		mu.Lock()
		nodes++
		mu.Unlock()
		return n.FlushDB(ctx).Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if nodes != 3 {
		t.Errorf("called for %d nodes, want the 3 primaries", nodes)
	}
	for i := range 50 {
		if n, err := rdb.Exists(ctx, "k{"+strconv.Itoa(i)+"}").Result(); err != nil || n != 0 {
			t.Fatalf("k{%d} after the flush: exists %d, %v", i, n, err)
		}
	}
}
