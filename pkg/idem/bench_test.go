package idem_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/lua"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/redis/go-redis/v9"
)

// Benchmarks run against the harness Redis (database 1). Compare
// BeginComplete with RawEvalSha: the boundary's overhead over the two bare
// script calls it makes.

func benchClient(b *testing.B) *redis.Client {
	opt := testenv.RedisOptions(b, redisDB)
	opt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opt)
	b.Cleanup(func() { rdb.Close() })
	return rdb
}

func BenchmarkBeginComplete(b *testing.B) {
	s := idem.New(benchClient(b), idem.Config{Retention: time.Minute})
	ctx := context.Background()
	prefix := testenv.Name(b, "bench")
	result := []byte(`{"status":202,"body":"eyJpZCI6InBheV8xIn0="}`)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		k, _ := idem.NewKey("bench", prefix+strconv.Itoa(i))
		c, err := s.Begin(ctx, k, "api", "fp")
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Lease.Complete(ctx, result); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBeginReplay(b *testing.B) {
	s := idem.New(benchClient(b), idem.Config{Retention: time.Minute})
	ctx := context.Background()
	k, _ := idem.NewKey("bench", testenv.Name(b, "replay"))
	c, err := s.Begin(ctx, k, "api", "fp")
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Lease.Complete(ctx, []byte(`{"status":202,"body":"eyJpZCI6InBheV8xIn0="}`)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if c, err := s.Begin(ctx, k, "api", "fp"); err != nil || c.Outcome != idem.Completed {
			b.Fatal(c, err)
		}
	}
}

// BenchmarkRawEvalSha is the baseline: the same two scripts through a bare
// go-redis EvalSha, no key building, parsing or owner tokens.
func BenchmarkRawEvalSha(b *testing.B) {
	rdb := benchClient(b)
	ctx := context.Background()
	beginSHA, err := rdb.ScriptLoad(ctx, lua.Begin()).Result()
	if err != nil {
		b.Fatal(err)
	}
	completeSHA, err := rdb.ScriptLoad(ctx, lua.Complete()).Result()
	if err != nil {
		b.Fatal(err)
	}
	prefix := "idem:v1:{bench:" + testenv.Name(b, "raw")
	result := `{"status":202,"body":"eyJpZCI6InBheV8xIn0="}`
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		key := []string{prefix + strconv.Itoa(i) + "}"}
		if err := rdb.EvalSha(ctx, beginSHA, key, "api", "owner", "fp", 30000, 60000).Err(); err != nil {
			b.Fatal(err)
		}
		if err := rdb.EvalSha(ctx, completeSHA, key, "api", "owner", result, 60000).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkKeep is what Lease.Keep and its stop cost around work that ends
// before the first heartbeat (the usual charge: tens of milliseconds under
// a lease of seconds). No Redis call is made.
func BenchmarkKeep(b *testing.B) {
	s := idem.New(benchClient(b), idem.Config{Retention: time.Minute})
	ctx := context.Background()
	k, _ := idem.NewKey("bench", testenv.Name(b, "keep"))
	c, err := s.Begin(ctx, k, "charge", "fp")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		work, stop := c.Lease.Keep(ctx)
		if work.Err() != nil {
			b.Fatal(work.Err())
		}
		stop()
	}
}
