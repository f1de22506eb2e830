package deploy_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Redis's maxmemory must leave headroom below the container's memory limit
// for what it does not count (allocator overhead, AOF buffers, the
// copy-on-write of an AOF rewrite's fork): at most this share of the limit
// (docs/deploy.md, "Redis memory").
const maxmemoryShare = 0.75

// redisMemory parses a Redis memory value as redis.conf reads it: bytes, or
// a number with k/m/g (1000^n) or kb/mb/gb (1024^n), case-insensitive.
func redisMemory(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"b", 1}}
	lower := strings.ToLower(s)
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(lower, u.suffix) {
			lower, mult = strings.TrimSuffix(lower, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(lower, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("redis memory value %q: want a positive number of bytes, kb, mb or gb", s)
	}
	return n * mult, nil
}

// dockerMemory parses a Compose mem_limit: bytes, or b/k/m/g (1024^n).
func dockerMemory(s string) (int64, error) {
	lower := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	switch {
	case strings.HasSuffix(lower, "g"):
		mult = 1 << 30
	case strings.HasSuffix(lower, "m"):
		mult = 1 << 20
	case strings.HasSuffix(lower, "k"):
		mult = 1 << 10
	}
	n, err := strconv.ParseInt(strings.TrimRight(lower, "bkmg"), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("mem_limit %q: want a positive size", s)
	}
	return n * mult, nil
}

// checkRedisMemoryArgs checks that args (redis-server's, joined or not)
// set maxmemory-policy noeviction and a maxmemory within maxmemoryShare of
// limit (bytes), and returns the maxmemory argument.
func checkRedisMemoryArgs(t *testing.T, where string, args []string, limit int64) string {
	t.Helper()
	if !strings.Contains(strings.Join(args, " "), "--maxmemory-policy noeviction") {
		t.Errorf("%s: no --maxmemory-policy noeviction: an evicting policy drops idempotency records (double charges); "+
			"noeviction must be stated, not left to the default: %v", where, args)
	}
	i := slices.Index(args, "--maxmemory")
	if i < 0 || i+1 >= len(args) {
		t.Errorf("%s: no --maxmemory: Redis grows until its memory limit kills it (docs/deploy.md, \"Redis memory\"): %v", where, args)
		return ""
	}
	mm, err := redisMemory(args[i+1])
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return args[i+1]
	}
	if float64(mm) > maxmemoryShare*float64(limit) {
		t.Errorf("%s: maxmemory %s (%d bytes) is more than %.0f%% of the memory limit (%d bytes): no headroom for the AOF rewrite's fork, AOF buffers and allocator overhead",
			where, args[i+1], mm, 100*maxmemoryShare, limit)
	}
	return args[i+1]
}

// redisStatefulSet returns the Redis StatefulSet of r.
func redisStatefulSet(t *testing.T, r rendered) *appsv1.StatefulSet {
	t.Helper()
	for _, o := range r.byKind("StatefulSet") {
		s := o.obj.(*appsv1.StatefulSet)
		if s.Spec.Template.Labels["app.kubernetes.io/component"] == "redis" {
			return s
		}
	}
	t.Fatal("no Redis StatefulSet rendered")
	return nil
}

// TestChartRedisMaxmemory: Redis's maxmemory is redis.maxmemory (192mb
// unless set), with maxmemory-policy noeviction whatever the values, and
// stays within maxmemoryShare of the container's memory limit.
func TestChartRedisMaxmemory(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		set  []string
		want string
	}{
		{"default", nil, "192mb"},
		{"raised with the limit", []string{"redis.maxmemory=1536mb", "redis.resources.limits.memory=2Gi"}, "1536mb"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := redisStatefulSet(t, render(t, valueSet{name: "maxmemory-" + tt.name, set: tt.set}))
			c := s.Spec.Template.Spec.Containers[0]
			limit, ok := c.Resources.Limits[corev1.ResourceMemory]
			if !ok {
				t.Fatalf("StatefulSet %s: no memory limit", s.Name)
			}
			if got := checkRedisMemoryArgs(t, "StatefulSet "+s.Name, c.Args, limit.Value()); got != tt.want {
				t.Errorf("StatefulSet %s: --maxmemory %q, want %q", s.Name, got, tt.want)
			}
		})
	}
}

func TestRedisMemoryUnits(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"192mb": 192 << 20, "1GB": 1 << 30, "100m": 100e6, "2048": 2048, "5kb": 5 << 10} {
		if got, err := redisMemory(in); err != nil || got != want {
			t.Errorf("redisMemory(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, want := range map[string]int64{"256m": 256 << 20, "1g": 1 << 30, "512k": 512 << 10} {
		if got, err := dockerMemory(in); err != nil || got != want {
			t.Errorf("dockerMemory(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}
