// Package redistest connects tests to a real Redis: the shared one that
// `make test` starts with scripts/harness (REDIS_URL), a private
// redis-server that one test owns and may crash, restart or fill (Server),
// or a Redis Cluster or Sentinel setup that one test owns on the ports of
// REDIS_HA_PORTS (StartCluster, StartSentinel).
//
// It is the Redis part of the test rig, in a module of its own that needs
// only go-redis, so that the library (pkg/idem) can test against a real
// Redis without its module graph naming Postgres or RabbitMQ drivers.
// internal/testenv builds on it for the services' tests.
//
// A Redis that is not configured or cannot be reached FAILS the test with a
// hint; it never skips silently. The only opt-out is
// ONCEPAY_SKIP_INTEGRATION=1, which skips every integration test explicitly.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Hint tells a developer how to get the services a failing integration
// test needs.
const Hint = "start the services with `make test`, or `scripts/harness up && eval \"$(scripts/harness env)\"` before `go test`; set ONCEPAY_SKIP_INTEGRATION=1 to skip integration tests on purpose"

// Integration marks t as an integration test: it skips only when
// ONCEPAY_SKIP_INTEGRATION=1 is set.
func Integration(t testing.TB) {
	t.Helper()
	if os.Getenv("ONCEPAY_SKIP_INTEGRATION") == "1" {
		t.Skip("ONCEPAY_SKIP_INTEGRATION=1")
	}
}

// Env returns the environment variable name, failing the test with Hint if
// it is unset. It calls Integration first.
func Env(t testing.TB, name string) string {
	t.Helper()
	Integration(t)
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: %s", name, Hint)
	}
	return v
}

// URL returns REDIS_URL after checking that Redis answers PING.
func URL(t testing.TB) string {
	t.Helper()
	u := Env(t, "REDIS_URL")
	opt, err := redis.ParseURL(u)
	if err != nil {
		t.Fatalf("REDIS_URL %q: %v", u, err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis at %s does not answer: %v\n%s", opt.Addr, err, Hint)
	}
	return u
}

// Options returns the parsed options of the shared Redis (URL) on database
// db (1..15). Each package uses its own db so that a FLUSHDB in one cannot
// touch another's keys.
func Options(t testing.TB, db int) *redis.Options {
	t.Helper()
	opt, _ := redis.ParseURL(URL(t))
	opt.DB = db
	return opt
}

// Client returns a client on database db of the shared Redis, closed at
// cleanup.
func Client(t testing.TB, db int) *redis.Client {
	t.Helper()
	c := redis.NewClient(Options(t, db))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Name returns a name unique to this test run, for key prefixes, merchants,
// queues and exchanges: prefix + "-" + a short random suffix ("t" if prefix
// is empty).
func Name(t testing.TB, prefix string) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	if prefix == "" {
		prefix = "t"
	}
	return fmt.Sprintf("%s-%s", prefix, hex.EncodeToString(b[:]))
}
