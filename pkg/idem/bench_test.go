package idem_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/lua"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/redis/go-redis/v9"
)

// Benchmarks run against the harness Redis (database 1). Compare
// BeginComplete with RawEvalSha: the boundary's overhead over the two bare
// script calls it makes.

func benchClient(b *testing.B) *redis.Client {
	opt := redistest.Options(b, redisDB)
	opt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opt)
	b.Cleanup(func() { rdb.Close() })
	return rdb
}

func BenchmarkBeginComplete(b *testing.B) {
	s := idem.New(benchClient(b), idem.Config{Retention: time.Minute})
	ctx := context.Background()
	prefix := redistest.Name(b, "bench")
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
	k, _ := idem.NewKey("bench", redistest.Name(b, "replay"))
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
	prefix := "idem:v1:{bench:" + redistest.Name(b, "raw")
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
	k, _ := idem.NewKey("bench", redistest.Name(b, "keep"))
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

// BenchmarkBeginCompleteConcurrent runs Begin+Complete from several callers
// at once, as an api or a worker under load does, through a plain client
// (one round trip per call, each on a pooled connection of its own) and
// through go-redis's auto-pipeliner (calls made while a batch is in flight
// go out together in the next one). Besides the time per operation it
// reports the CPU Redis and this process spent per operation
// (redis-us/op, client-us/op): the boundary's cost on a shared machine.
// The auto-pipeliner is measured here only: it is EXPERIMENTAL in go-redis,
// it does not honour a command's context once queued (Config.Timeout
// relies on it), and on the 2-core machine of docs/PERFORMANCE.md it cost
// more client CPU than the plain client at 4 callers and less throughput
// at 16. make bench leaves this benchmark out; run it with
// go test -run '^$' -bench BeginCompleteConcurrent ./pkg/idem.
func BenchmarkBeginCompleteConcurrent(b *testing.B) {
	for _, mode := range []string{"plain", "autopipeline"} {
		for _, callers := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("%s/callers=%d", mode, callers), func(b *testing.B) {
				rdb := benchClient(b)
				var scripter redis.Scripter = rdb
				if mode == "autopipeline" {
					ap, err := rdb.AutoPipeline()
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { ap.Close() })
					scripter = ap
				}
				s := idem.New(scripter, idem.Config{Retention: time.Minute})
				ctx := context.Background()
				prefix := redistest.Name(b, "conc")
				result := []byte(`{"status":202,"body":"eyJpZCI6InBheV8xIn0="}`)
				var n atomic.Int64
				redis0, client0 := redisCPU(b, rdb), processCPU()
				b.ResetTimer()
				var wg sync.WaitGroup
				for range callers {
					wg.Go(func() {
						for i := n.Add(1); i <= int64(b.N); i = n.Add(1) {
							k, _ := idem.NewKey("bench", prefix+strconv.FormatInt(i, 10))
							c, err := s.Begin(ctx, k, "api", "fp")
							if err != nil {
								b.Error(err)
								return
							}
							if err := c.Lease.Complete(ctx, result); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				ops := float64(b.N)
				b.ReportMetric((redisCPU(b, rdb)-redis0)/ops*1e6, "redis-us/op")
				b.ReportMetric((processCPU()-client0)/ops*1e6, "client-us/op")
			})
		}
	}
}

// redisCPU is the CPU seconds Redis has used (INFO cpu: used_cpu_sys +
// used_cpu_user).
func redisCPU(b *testing.B, rdb *redis.Client) float64 {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		name, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (name == "used_cpu_sys" || name == "used_cpu_user") {
			v, _ := strconv.ParseFloat(value, 64)
			total += v
		}
	}
	return total
}

// processCPU is the CPU seconds this process has used.
func processCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
