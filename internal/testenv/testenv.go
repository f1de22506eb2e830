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
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
)

const hint = "start the services with `make test`, or `scripts/harness up && eval \"$(scripts/harness env)\"` before `go test`; set ONCEPAY_SKIP_INTEGRATION=1 to skip integration tests on purpose"

// Integration marks t as an integration test: it skips only when
// ONCEPAY_SKIP_INTEGRATION=1 is set.
func Integration(t testing.TB) {
	t.Helper()
	if os.Getenv("ONCEPAY_SKIP_INTEGRATION") == "1" {
		t.Skip("ONCEPAY_SKIP_INTEGRATION=1")
	}
}

func mustEnv(t testing.TB, name string) string {
	t.Helper()
	Integration(t)
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: %s", name, hint)
	}
	return v
}

// RedisURL returns REDIS_URL after checking that Redis answers PING.
func RedisURL(t testing.TB) string {
	t.Helper()
	u := mustEnv(t, "REDIS_URL")
	opt, err := redis.ParseURL(u)
	if err != nil {
		t.Fatalf("REDIS_URL %q: %v", u, err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis at %s does not answer: %v\n%s", opt.Addr, err, hint)
	}
	return u
}

// Redis returns a client on database db (1..15) of the harness Redis, closed
// at cleanup. Each package uses its own db so that a FLUSHDB
// in one cannot touch another's keys.
func Redis(t testing.TB, db int) *redis.Client {
	t.Helper()
	opt, _ := redis.ParseURL(RedisURL(t))
	opt.DB = db
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// RedisOptions returns the parsed options of the harness Redis on database db.
func RedisOptions(t testing.TB, db int) *redis.Options {
	t.Helper()
	opt, _ := redis.ParseURL(RedisURL(t))
	opt.DB = db
	return opt
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
	u := mustEnv(t, name)
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
	u := mustEnv(t, "AMQP_URL")
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
	h := mustEnv(t, "ONCEPAY_HARNESS")
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
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	if prefix == "" {
		prefix = "t"
	}
	return fmt.Sprintf("%s-%s", prefix, hex.EncodeToString(b[:]))
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable url)"
	}
	return u.Redacted()
}
