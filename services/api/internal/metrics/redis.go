package metrics

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// RedisInfo is the part of a go-redis client that RedisMemory reads.
type RedisInfo interface {
	InfoMap(ctx context.Context, sections ...string) *redis.InfoCmd
}

// RedisMemory is a collector that reads Redis's INFO memory at a scrape
// and reports how full the boundary's Redis is:
//
//	redis_memory_used_bytes  used_memory, what maxmemory is compared with
//	redis_memory_max_bytes   maxmemory; 0 when Redis has no limit
//
// The names and meanings are redis_exporter's, so alerts and dashboards
// written against these work with it too. A Redis with maxmemory and the
// noeviction policy (as oncepay runs it) refuses new payments once used
// reaches max; the ratio of the two is what to alert on before that.
//
// A scrape that cannot read INFO within the timeout reports neither gauge
// (and no error, so the rest of the scrape is kept): an absent series means
// "unknown", and /readyz already reports a Redis that does not answer.
//
// However often /metrics is scraped, Redis sees at most one INFO per
// maxAge: a read younger than that is reported again, and concurrent
// scrapes wait for one read instead of each sending their own. It is safe
// for concurrent use.
type RedisMemory struct {
	rdb       RedisInfo
	timeout   time.Duration
	maxAge    time.Duration
	used, max *prometheus.Desc

	mu        sync.Mutex // held for a read, so that scrapes share it
	readAt    time.Time  // when the last read was tried; zero before the first
	lastUsed  int64
	lastMax   int64
	lastValid bool
}

// NewRedisMemory returns a RedisMemory on rdb; a read waits at most timeout
// for Redis, and is reused by the scrapes of the following maxAge.
func NewRedisMemory(rdb RedisInfo, timeout, maxAge time.Duration) *RedisMemory {
	return &RedisMemory{
		rdb:     rdb,
		timeout: timeout,
		maxAge:  maxAge,
		used: prometheus.NewDesc("redis_memory_used_bytes",
			"Redis's used_memory (INFO memory), read at scrape time: what maxmemory is compared with.", nil, nil),
		max: prometheus.NewDesc("redis_memory_max_bytes",
			"Redis's maxmemory (INFO memory), read at scrape time; 0 when Redis has no limit.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *RedisMemory) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.used
	ch <- c.max
}

// Collect implements prometheus.Collector.
func (c *RedisMemory) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	if c.readAt.IsZero() || time.Since(c.readAt) >= c.maxAge {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		used, max, err := readRedisMemory(c.rdb.InfoMap(ctx, "memory"))
		cancel()
		c.readAt, c.lastUsed, c.lastMax, c.lastValid = time.Now(), used, max, err == nil
	}
	used, max, valid := c.lastUsed, c.lastMax, c.lastValid
	c.mu.Unlock()
	if !valid {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, float64(used))
	ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(max))
}

// readRedisMemory takes used_memory and maxmemory out of an INFO memory reply.
func readRedisMemory(info *redis.InfoCmd) (used, max int64, err error) {
	if err := info.Err(); err != nil {
		return 0, 0, err
	}
	if used, err = strconv.ParseInt(info.Item("Memory", "used_memory"), 10, 64); err != nil {
		return 0, 0, fmt.Errorf("INFO memory: used_memory: %w", err)
	}
	if max, err = strconv.ParseInt(info.Item("Memory", "maxmemory"), 10, 64); err != nil {
		return 0, 0, fmt.Errorf("INFO memory: maxmemory: %w", err)
	}
	return used, max, nil
}

// FullestPrimary is the RedisInfo of a Redis Cluster: its InfoMap reads
// INFO memory on every primary and answers with the one nearest to its
// maxmemory (the largest used_memory when none has a limit), since the
// first full shard is the one that refuses payments. Another client (one
// Redis, or a failover client: it reads the primary) is returned as is.
func FullestPrimary(rdb redis.UniversalClient) RedisInfo {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		return fullest{c}
	}
	return rdb
}

type fullest struct{ c *redis.ClusterClient }

func (f fullest) InfoMap(ctx context.Context, sections ...string) *redis.InfoCmd {
	var mu sync.Mutex
	var best map[string]map[string]string
	var bestUsed, bestMax int64
	out := redis.NewInfoCmd(ctx, "info")
	err := f.c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		info := n.InfoMap(ctx, sections...)
		used, max, err := readRedisMemory(info)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if best == nil || fuller(used, max, bestUsed, bestMax) {
			best, bestUsed, bestMax = info.Val(), used, max
		}
		return nil
	})
	if err != nil {
		out.SetErr(err)
		return out
	}
	out.SetVal(best)
	return out
}

// fuller reports whether used of max is fuller than used2 of max2: a
// larger share of a limit, a limit over none, or more bytes without one.
func fuller(used, max, used2, max2 int64) bool {
	switch {
	case max > 0 && max2 > 0:
		return float64(used)/float64(max) > float64(used2)/float64(max2)
	case max > 0 || max2 > 0:
		return max > 0
	default:
		return used > used2
	}
}
