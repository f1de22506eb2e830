package metrics_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/services/api/internal/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// gauges gathers reg and returns the value of every gauge without labels.
func gauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if g := m.GetGauge(); g != nil && len(m.GetLabel()) == 0 {
				out[f.GetName()] = g.GetValue()
			}
		}
	}
	return out
}

// TestRedisMemory: the gauges follow a real Redis's INFO memory: no limit,
// a limit, and full (used above max, as when Redis refuses writes).
func TestRedisMemory(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	rdb := srv.Client()
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewRedisMemory(rdb, time.Second, 0))
	ctx := context.Background()

	g := gauges(t, reg)
	if g["redis_memory_used_bytes"] < 100_000 || g["redis_memory_max_bytes"] != 0 {
		t.Errorf("a fresh Redis without maxmemory: %v; want used ≥ 100 kB and max 0", g)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "192mb").Err(); err != nil {
		t.Fatal(err)
	}
	if g := gauges(t, reg); g["redis_memory_max_bytes"] != 192<<20 {
		t.Errorf("after CONFIG SET maxmemory 192mb: %v; want max %d", g, 192<<20)
	}
	srv.Fill()
	g = gauges(t, reg)
	if used, max := g["redis_memory_used_bytes"], g["redis_memory_max_bytes"]; max == 0 || used <= max {
		t.Errorf("a full Redis: used %v, max %v; want used above max", used, max)
	}
}

// TestRedisMemoryUnreachable: a Redis that does not answer leaves the two
// series out and fails nothing else of the scrape.
func TestRedisMemoryUnreachable(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	addr := srv.Addr()
	srv.Stop()
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	reg := prometheus.NewRegistry()
	other := prometheus.NewGauge(prometheus.GaugeOpts{Name: "other", Help: "another collector"})
	reg.MustRegister(metrics.NewRedisMemory(rdb, 200*time.Millisecond, 0), other)

	g := gauges(t, reg)
	if _, ok := g["redis_memory_used_bytes"]; ok {
		t.Errorf("Redis is down, yet redis_memory_used_bytes = %v", g["redis_memory_used_bytes"])
	}
	if _, ok := g["redis_memory_max_bytes"]; ok {
		t.Errorf("Redis is down, yet redis_memory_max_bytes = %v", g["redis_memory_max_bytes"])
	}
	if _, ok := g["other"]; !ok {
		t.Errorf("the rest of the scrape was lost: %v", g)
	}
}

// TestRedisMemoryBoundsINFO: however often /metrics is scraped, Redis sees
// at most one INFO per maxAge.
func TestRedisMemoryBoundsINFO(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	rdb := srv.Client()
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewRedisMemory(rdb, time.Second, time.Hour))
	ctx := context.Background()
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for range 200 {
		if g := gauges(t, reg); g["redis_memory_used_bytes"] == 0 {
			t.Fatalf("no redis_memory_used_bytes: %v", g)
		}
	}
	stats, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stats, "cmdstat_info:calls=1,") {
		t.Errorf("200 scrapes within maxAge sent more than one INFO:\n%s", stats)
	}
}
