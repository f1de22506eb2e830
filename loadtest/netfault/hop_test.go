package netfault_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/loadtest/netfault"
	"github.com/redis/go-redis/v9"
)

// BenchmarkRedisHop measures what a clean proxy (no toxic) adds to one
// round trip: each iteration sends one PING to the harness Redis directly
// and one through a proxy, so that both meet the same machine load, and
// reports the median of each and of their difference.
//
//	go test -run '^$' -bench RedisHop ./netfault
func BenchmarkRedisHop(b *testing.B) {
	in := netfault.New(testenv.Toxiproxy(b))
	upstream := testenv.RedisOptions(b, redisDB).Addr
	addr, err := in.CreateProxy("bench", netfault.Redis, "127.0.0.1:0", upstream)
	if err != nil {
		b.Fatal(err)
	}
	direct, proxied := redisClient(b, upstream), redisClient(b, addr)
	ctx := context.Background()
	ping := func(c *redis.Client) time.Duration {
		start := time.Now()
		if err := c.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	ping(direct)
	ping(proxied)
	var d, p, diff []float64
	for b.Loop() {
		x, y := ping(direct), ping(proxied)
		d, p, diff = append(d, us(x)), append(p, us(y)), append(diff, us(y-x))
	}
	b.ReportMetric(median(d), "direct-p50-µs")
	b.ReportMetric(median(p), "proxied-p50-µs")
	b.ReportMetric(median(diff), "hop-p50-µs")
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
