package verify

import (
	"context"
	"fmt"
	"testing"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/pkg/service/dial"
)

// On a Redis Cluster the run's records are spread over the primaries by
// their hash tags; readBoundary scans every primary and finds them all.
// Not parallel: the Cluster uses the fixed REDIS_HA_PORTS.
func TestReadBoundaryScansEveryPrimary(t *testing.T) {
	c := redistest.StartCluster(t)
	a := c.Addrs()
	rdb, err := dial.Redis(dial.RedisCluster, "redis://"+a[0]+"?addr="+a[1], dial.RedisTuning{})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx := context.Background()
	const n = 60
	for i := range n {
		key := fmt.Sprintf("idem:v1:{m%d:run1-%d}", i, i)
		if err := rdb.HSet(ctx, key, "charge:state", "C", "charge:attempt", "1").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.HSet(ctx, "idem:v1:{m0:run2-0}", "charge:state", "P").Err(); err != nil {
		t.Fatal(err)
	}
	stages, _, err := readBoundary(ctx, rdb, "run1")
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != n {
		t.Errorf("read %d stages of run1, want %d (one per record, on every primary)", len(stages), n)
	}
}
