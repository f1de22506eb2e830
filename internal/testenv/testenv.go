// Package testenv connects integration tests to the real Redis, Postgres and
// RabbitMQ that `make test` starts with scripts/harness.
//
// A service that is not configured or cannot be reached FAILS the test with a
// hint; it never skips silently. The only opt-out is ONCEPAY_SKIP_INTEGRATION=1,
// which skips every integration test explicitly.
//
// Test isolation: packages run one at a time (`go test -p 1`), because fault
// tests restart the shared services. Within a package, tests that inject a
// fault must not call t.Parallel. Every other test uses its own Redis database
// or key prefix, its own Postgres database (NewDatabase) and its own RabbitMQ
// names (Name).
package testenv

import (
	"context"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncepay/oncepay/internal/redistest"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
)

const hint = redistest.Hint

// Integration marks t as an integration test: it skips only when
// ONCEPAY_SKIP_INTEGRATION=1 is set.
func Integration(t testing.TB) {
	t.Helper()
	redistest.Integration(t)
}

// RedisURL returns REDIS_URL after checking that Redis answers PING.
func RedisURL(t testing.TB) string {
	t.Helper()
	return redistest.URL(t)
}

// Redis returns a client on database db (1..15) of the harness Redis, closed
// at cleanup. Each package uses its own db so that a FLUSHDB
// in one cannot touch another's keys.
func Redis(t testing.TB, db int) *redis.Client {
	t.Helper()
	return redistest.Client(t, db)
}

// RedisOptions returns the parsed options of the harness Redis on database db.
func RedisOptions(t testing.TB, db int) *redis.Options {
	t.Helper()
	return redistest.Options(t, db)
}

// RedisServer is a private redis-server owned by one test; see
// redistest.Server.
type RedisServer = redistest.Server

// StartRedis starts a private redis-server for this test; see
// redistest.StartServer.
func StartRedis(t testing.TB) *RedisServer {
	t.Helper()
	return redistest.StartServer(t)
}

// PostgresURL returns DATABASE_URL after checking that Postgres answers.
func PostgresURL(t testing.TB) string {
	t.Helper()
	return pgCheck(t, "DATABASE_URL")
}

// PSPPostgresURL returns PSP_DATABASE_URL after checking that Postgres answers.
func PSPPostgresURL(t testing.TB) string {
	t.Helper()
	return pgCheck(t, "PSP_DATABASE_URL")
}

func pgCheck(t testing.TB, name string) string {
	t.Helper()
	u := redistest.Env(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatalf("postgres (%s) does not answer: %v\n%s", name, err, hint)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "select 1"); err != nil {
		t.Fatalf("postgres (%s) does not answer: %v\n%s", name, err, hint)
	}
	return u
}

// NewDatabase creates an empty database for this test and returns its URL; it
// is dropped at cleanup. Migrations are the caller's job.
func NewDatabase(t testing.TB) string {
	t.Helper()
	base := PostgresURL(t)
	name := "t_" + strings.ReplaceAll(strings.ToLower(Name(t, "")), "-", "_")
	if len(name) > 60 {
		name = name[:60]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect %s: %v", redact(base), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
	})
	u, _ := url.Parse(base)
	u.Path = "/" + name
	return u.String()
}

// AMQPURL returns AMQP_URL after checking that RabbitMQ accepts a connection.
func AMQPURL(t testing.TB) string {
	t.Helper()
	u := redistest.Env(t, "AMQP_URL")
	conn, err := amqp.DialConfig(u, amqp.Config{Dial: amqp.DefaultDial(3 * time.Second)})
	if err != nil {
		t.Fatalf("rabbitmq at %s does not answer: %v\n%s", redact(u), err, hint)
	}
	_ = conn.Close()
	return u
}

// Harness runs scripts/harness with args (e.g. "restart", "rabbitmq") and
// fails the test if it fails. Only tests that do not call t.Parallel may use it.
func Harness(t testing.TB, args ...string) {
	t.Helper()
	h := redistest.Env(t, "ONCEPAY_HARNESS")
	cmd := exec.Command(h, args...) // #nosec G204 -- h is ONCEPAY_HARNESS, which scripts/harness run sets to itself; args are the test's own
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("harness %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("harness %s: done", strings.Join(args, " "))
}

// Name returns a name unique to this test run, for queues, exchanges, key
// prefixes and merchants: prefix + short random suffix.
func Name(t testing.TB, prefix string) string {
	t.Helper()
	return redistest.Name(t, prefix)
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable url)"
	}
	return u.Redacted()
}
