package netfault_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/loadtest/netfault"
	"github.com/redis/go-redis/v9"
)

// redisDB is this package's Redis database.
const redisDB = 12

// redisVia returns a client of the harness Redis that dials addr (a proxy),
// with no retries, closed at cleanup.
func redisVia(t *testing.T, addr string) *redis.Client { return redisClient(t, addr) }

func redisClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	opt := testenv.RedisOptions(t, redisDB)
	opt.Addr = addr
	opt.MaxRetries = -1
	opt.ContextTimeoutEnabled = true
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// proxies creates a proxy to upstream for each replica and returns their
// listen addresses.
func proxies(t *testing.T, in *netfault.Injector, service, upstream string, replicas ...string) []string {
	t.Helper()
	var addrs []string
	for _, r := range replicas {
		a, err := in.CreateProxy(r, service, "127.0.0.1:0", upstream)
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, a)
	}
	return addrs
}

func redisAddr(t *testing.T) string { return testenv.RedisOptions(t, redisDB).Addr }

// timed runs f with a timeout and returns how long it took and its error.
func timed(timeout time.Duration, f func(ctx context.Context) error) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	err := f(ctx)
	return time.Since(start), err
}

// isTimeout reports whether err is a timeout: the context's, or the
// connection's deadline that go-redis sets from it.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

func mustUndo(t *testing.T, undo netfault.Undo) {
	t.Helper()
	if err := undo(); err != nil {
		t.Fatalf("undo: %v", err)
	}
}

func TestLatencyDelaysOneReplicasAnswers(t *testing.T) {
	t.Parallel()
	in := netfault.New(testenv.Toxiproxy(t))
	addrs := proxies(t, in, netfault.Redis, redisAddr(t), "worker-1", "worker-2")
	slow, direct := redisVia(t, addrs[0]), redisVia(t, addrs[1])
	ping := func(c *redis.Client) func(context.Context) error {
		return func(ctx context.Context) error { return c.Ping(ctx).Err() }
	}
	if _, err := timed(2*time.Second, ping(slow)); err != nil { // connect before the fault
		t.Fatal(err)
	}

	undo, err := in.Latency("worker-1", netfault.Redis, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if took, err := timed(2*time.Second, ping(slow)); err != nil || took < 300*time.Millisecond {
		t.Errorf("PING through worker-1.redis with 300ms latency: took %s, err %v; want >= 300ms, nil", took, err)
	}
	if took, err := timed(2*time.Second, ping(direct)); err != nil || took > 150*time.Millisecond {
		t.Errorf("PING through worker-2.redis: took %s, err %v; want fast, nil", took, err)
	}
	if took, err := timed(200*time.Millisecond, ping(slow)); !isTimeout(err) {
		t.Errorf("PING with a 200ms timeout under 300ms latency: took %s, err %v; want a timeout", took, err)
	}
	mustUndo(t, undo)
	mustUndo(t, undo) // twice is fine
	if took, err := timed(2*time.Second, ping(redisVia(t, addrs[0]))); err != nil || took > 150*time.Millisecond {
		t.Errorf("PING through worker-1.redis after undo: took %s, err %v; want fast, nil", took, err)
	}
}

func TestPartitionBlackholesOneReplicasPath(t *testing.T) {
	t.Parallel()
	in := netfault.New(testenv.Toxiproxy(t))
	addrs := proxies(t, in, netfault.Redis, redisAddr(t), "worker-1", "worker-2")
	cut, direct := redisVia(t, addrs[0]), redisVia(t, addrs[1])
	key := testenv.Name(t, "netfault")

	undo, err := in.Partition("worker-1", netfault.Redis)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Partition("worker-1", netfault.Redis); err == nil {
		t.Error("a second partition of worker-1.redis was accepted; want it refused")
	}
	// A blackhole, not a refusal: the write times out, it is not refused,
	// and it never reaches Redis.
	took, err := timed(500*time.Millisecond, func(ctx context.Context) error { return cut.Set(ctx, key, "cut", 0).Err() })
	if !isTimeout(err) || took < 450*time.Millisecond {
		t.Errorf("SET through a partitioned worker-1.redis: took %s, err %v; want a timeout after 500ms", took, err)
	}
	if err := direct.Set(context.Background(), key+":2", "ok", time.Minute).Err(); err != nil {
		t.Errorf("SET through worker-2.redis during worker-1's partition: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if n, err := direct.Exists(context.Background(), key).Result(); err != nil || n != 0 {
		t.Errorf("the partitioned SET reached Redis: EXISTS = %d, %v", n, err)
	}
	mustUndo(t, undo)
	if err := redisVia(t, addrs[0]).Ping(context.Background()).Err(); err != nil {
		t.Errorf("PING through worker-1.redis after the partition: %v", err)
	}
}

func TestResetPeerLosesTheAnswerNotTheRequest(t *testing.T) {
	t.Parallel()
	in := netfault.New(testenv.Toxiproxy(t))
	addrs := proxies(t, in, netfault.Redis, redisAddr(t), "worker-1")
	via, direct := redisVia(t, addrs[0]), testenv.Redis(t, redisDB)
	key := testenv.Name(t, "netfault")
	t.Cleanup(func() { direct.Del(context.Background(), key) })
	ctx := context.Background()

	if err := via.Ping(ctx).Err(); err != nil { // connected before the fault
		t.Fatal(err)
	}
	undo, err := in.ResetPeer("worker-1", netfault.Redis)
	if err != nil {
		t.Fatal(err)
	}
	err = via.Incr(ctx, key).Err()
	// the connection was open before the toxic: closed (EOF); a new one
	// would be reset (RST)
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
		t.Errorf("INCR through worker-1.redis with reset_peer: %v; want the connection reset or closed", err)
	}
	if n, err := direct.Get(ctx, key).Int(); err != nil || n != 1 {
		t.Errorf("after the reset INCR, the key is %d (%v); want 1: the request took effect", n, err)
	}
	mustUndo(t, undo)
	if err := via.Incr(ctx, key).Err(); err != nil {
		t.Errorf("INCR after undo: %v", err)
	}
}

func TestSlowPostgresDelaysButAnswers(t *testing.T) {
	t.Parallel()
	base, err := url.Parse(testenv.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	in := netfault.New(testenv.Toxiproxy(t))
	addrs := proxies(t, in, netfault.Postgres, base.Host, "api-1")
	base.Host = addrs[0]
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	query := func(ctx context.Context) error {
		var n int
		if err := conn.QueryRow(ctx, "select 41 + 1").Scan(&n); err != nil {
			return err
		}
		if n != 42 {
			return errors.New("wrong answer")
		}
		return nil
	}
	undo, err := in.Slow("api-1", netfault.Postgres, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if took, err := timed(5*time.Second, query); err != nil || took < 150*time.Millisecond {
		t.Errorf("query through a slow api-1.postgres: took %s, err %v; want >= 150ms (200ms ± 50ms), nil", took, err)
	}
	mustUndo(t, undo)
	if took, err := timed(5*time.Second, query); err != nil || took > 100*time.Millisecond {
		t.Errorf("query after undo: took %s, err %v; want fast, nil", took, err)
	}
}

func TestInject(t *testing.T) {
	t.Parallel()
	in := netfault.New(testenv.Toxiproxy(t))
	proxies(t, in, netfault.PSP, "127.0.0.1:1", "worker-1")
	for _, kind := range []string{netfault.KindLatency, netfault.KindPartition, netfault.KindResetPeer, netfault.KindSlow} {
		undo, err := in.Inject(context.Background(), kind, "worker-1.psp", time.Second)
		if err != nil {
			t.Errorf("Inject(%s): %v", kind, err)
			continue
		}
		if err := undo(); err != nil {
			t.Errorf("undo %s: %v", kind, err)
		}
	}
	for _, c := range []struct{ kind, target, want string }{
		{"flood", "worker-1.psp", "unknown fault kind"},
		{netfault.KindLatency, "worker-1", "not <replica>.<service>"},
		{netfault.KindLatency, "worker-3.psp", "proxy worker-3.psp"},
	} {
		if _, err := in.Inject(context.Background(), c.kind, c.target, time.Second); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Inject(%s, %s) = %v; want an error with %q", c.kind, c.target, err, c.want)
		}
	}
}

func TestSplit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, replica, service string }{
		{"worker-1.redis", "worker-1", "redis"},
		{"api.eu.1.postgres", "api.eu.1", "postgres"},
	} {
		r, s, err := netfault.Split(c.in)
		if err != nil || r != c.replica || s != c.service {
			t.Errorf("Split(%q) = %q, %q, %v; want %q, %q", c.in, r, s, err, c.replica, c.service)
		}
	}
	for _, bad := range []string{"", "redis", ".redis", "worker-1."} {
		if _, _, err := netfault.Split(bad); err == nil {
			t.Errorf("Split(%q) = nil error; want one", bad)
		}
	}
}
