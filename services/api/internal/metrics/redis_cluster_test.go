package metrics_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/services/api/internal/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// TestRedisMemoryFullestPrimary: on a real Redis Cluster the gauges report
// the primary nearest to its maxmemory at every scrape, whichever node a
// plain INFO would reach. Not parallel: the Cluster uses the fixed REDIS_HA_PORTS.
func TestRedisMemoryFullestPrimary(t *testing.T) {
	c := redistest.StartCluster(t)
	cc := c.Client()
	ctx := context.Background()
	var mu sync.Mutex
	var primaries []*redis.Client
	if err := cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		return n.ConfigSet(ctx, "maxmemory", "1gb").Err()
	}); err != nil {
		t.Fatal(err)
	}
	_ = cc.ForEachMaster(ctx, func(_ context.Context, n *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		primaries = append(primaries, n)
		return nil
	})
	// the fullest: one primary with a small limit
	small := primaries[0]
	if err := small.ConfigSet(ctx, "maxmemory", "64mb").Err(); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewRedisMemory(metrics.FullestPrimary(cc), time.Second, 0))
	// a plain INFO reaches a node of the client's choosing, scrape by scrape
	for range 10 {
		if g := gauges(t, reg); g["redis_memory_max_bytes"] != 64<<20 {
			t.Fatalf("gauges %v: want the max of the fullest primary, %d", g, 64<<20)
		}
	}
}
