package pace_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/pace"
)

func TestRunRunsEverySlot(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	res := pace.Run(context.Background(), pace.Config{Rate: 200, Duration: 500 * time.Millisecond, Workers: 8},
		func(context.Context, int) error { calls.Add(1); return nil })
	// Counts only: whether it kept up depends on how busy the machine is.
	if res.Scheduled != 100 || res.Done+res.Skipped != 100 || int(calls.Load()) != res.Done {
		t.Errorf("scheduled %d, done %d, skipped %d, called %d; want 100 = done + skipped, called = done",
			res.Scheduled, res.Done, res.Skipped, calls.Load())
	}
}

func TestRunReportsAStageThatFallsBehind(t *testing.T) {
	t.Parallel()
	// One worker, 20 ms per slot: at most 50/s against 200/s offered. A
	// busier machine only makes it later, so this cannot flake.
	res := pace.Run(context.Background(), pace.Config{Rate: 200, Duration: 500 * time.Millisecond, Workers: 1, MaxLag: 100 * time.Millisecond},
		func(context.Context, int) error { time.Sleep(20 * time.Millisecond); return nil })
	if res.KeptUp() || res.Skipped == 0 {
		t.Errorf("a stage at a quarter of the rate kept up: %+v", res)
	}
}

func TestRunCountsErrors(t *testing.T) {
	t.Parallel()
	res := pace.Run(context.Background(), pace.Config{Rate: 100, Duration: 200 * time.Millisecond},
		func(_ context.Context, i int) error {
			if i%2 == 0 {
				return errors.New("boom")
			}
			return nil
		})
	if res.Errors != 10 || res.Done != 10 || res.FirstErr != "boom" || res.KeptUp() {
		t.Errorf("errors %d, done %d, first %q, kept up %v; want 10, 10, boom, false", res.Errors, res.Done, res.FirstErr, res.KeptUp())
	}
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	xs := []float64{5, 1, 4, 2, 3}
	if p50, p99 := pace.Percentile(xs, 50), pace.Percentile(xs, 99); p50 != 3 || p99 != 5 {
		t.Errorf("p50, p99 = %v, %v; want 3, 5", p50, p99)
	}
	if pace.Percentile(nil, 50) != 0 {
		t.Error("percentile of nothing is not 0")
	}
}
