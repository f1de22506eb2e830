package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/results"
	"github.com/oncepay/oncepay/pkg/idem"
)

// floorWarmup calls precede every floor measurement, unmeasured: the
// connection is open and the scripts are loaded.
const floorWarmup = 100

// floor measures pkg/idem's own Begin+Complete on the services' Redis, one
// call at a time on fresh keys (named <run>-<n>, merchant "floor"): the two
// round trips the api's boundary cannot do without. It returns the latency
// percentiles of FloorOps calls.
func (b *bench) floor(ctx context.Context, run string) (results.Floor, error) {
	s := idem.New(b.cl.rdb, idem.Config{Retention: time.Minute})
	result := []byte(`{"status":202,"body":"eyJpZCI6InBheV8xIn0="}`)
	lat := make([]float64, 0, b.cfg.FloorOps)
	for i := range floorWarmup + b.cfg.FloorOps {
		k, err := idem.NewKey("floor", fmt.Sprintf("%s-%d", run, i))
		if err != nil {
			return results.Floor{}, err
		}
		t0 := time.Now()
		c, err := s.Begin(ctx, k, "api", "fp")
		if err != nil {
			return results.Floor{}, fmt.Errorf("floor: begin: %w", err)
		}
		if c.Outcome != idem.Acquired {
			return results.Floor{}, fmt.Errorf("floor: begin of a fresh key: %v, want Acquired", c.Outcome)
		}
		if err := c.Lease.Complete(ctx, result); err != nil {
			return results.Floor{}, fmt.Errorf("floor: complete: %w", err)
		}
		if i >= floorWarmup {
			lat = append(lat, float64(time.Since(t0))/1e6)
		}
	}
	slices.Sort(lat)
	return results.Floor{Ops: len(lat), P50MS: lat[len(lat)/2], P99MS: lat[len(lat)*99/100]}, nil
}
