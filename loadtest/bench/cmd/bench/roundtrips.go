package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/redisinfo"
	"github.com/oncepay/oncepay/loadtest/bench/results"
	"github.com/oncepay/oncepay/lua"
	"github.com/oncepay/oncepay/pkg/idem"
)

// roundTrips counts Redis commands per request, each phase after CONFIG
// RESETSTAT, while no worker runs (so that only the api talks to Redis);
// then starts the workers and counts the commands per charged payment.
func (b *bench) roundTrips(ctx context.Context, e *results.E2E, on, off *variant) error {
	b.phase("e2e: redis round trips")
	n, rt := "2000", &e.RoundTrips
	if b.cfg.Quick {
		n = "500"
	}
	for _, c := range []struct {
		name           string
		v              *variant
		into           *results.Commands
		mode, keysFrom string
	}{{"rt-fresh", on, &rt.Fresh, "fresh", ""}, {"rt-replay", on, &rt.Replay, "replay", "rt-fresh"}, {"rt-off", off, &rt.Off, "fresh", ""}} {
		if err := b.cl.rdb.ConfigResetStat(ctx).Err(); err != nil {
			return err
		}
		s, err := b.k6(ctx, c.name, 3*time.Minute, map[string]string{"TARGETS": c.v.targets(), "LOAD": "count", "VUS": "8",
			"ITERATIONS": n, "RUN": c.name, "MODE": c.mode, "KEYS_FROM": c.keysFrom, "KEYS": n}, nil)
		if err != nil {
			return err
		}
		if s.Failed > 0 {
			b.note("%s: %d requests failed %v", c.name, s.Failed, s.FailedBy)
		}
		if *c.into, err = b.commands(ctx, s.Accepted+s.Replayed); err != nil { // one of the two is 0
			return err
		}
	}
	e.OffHonoured = rt.Off.Requests > 0 && rt.Off.Total == 0
	switch {
	case b.patroni != nil:
		// the second copy keeps the boundary: the targets' on/off ratios
		// are not measured, and e.OffHonoured says so
		b.note("BENCH_PG=patroni: the second copy runs with the boundary, on Postgres under Patroni; the targets' on/off ratios are not measured")
	case !e.OffHonoured:
		b.note("the api with IDEM_STRATEGY=off made %d Redis calls for %d requests: the strategy is not honoured; on/off ratios are not measured",
			rt.Off.Total, rt.Off.Requests)
	}
	b.logf("  per new request %.3f (%v), per replay %.3f (%v), off %.3f",
		rt.Fresh.PerRequest(), rt.Fresh.ByCommand, rt.Replay.PerRequest(), rt.Replay.ByCommand, rt.Off.PerRequest())

	// Both copies' workers charge the backlog on a reset counter: the
	// copy without the boundary makes no Redis call.
	if err := b.cl.rdb.ConfigResetStat(ctx).Err(); err != nil {
		return err
	}
	for _, v := range b.copies {
		if err := b.startWorkers(ctx, v); err != nil {
			return err
		}
	}
	b.drain(ctx, 2*time.Minute)
	settled, err := b.settled(ctx, on)
	if err != nil {
		return err
	}
	if b.patroni != nil { // its workers call Redis too
		n, err := b.settled(ctx, off)
		if err != nil {
			return err
		}
		settled += n
	}
	if rt.Charge, err = b.commands(ctx, settled); err != nil {
		return err
	}
	b.logf("  per charged payment (worker) %.3f (%v)", rt.Charge.PerRequest(), rt.Charge.ByCommand)
	return nil
}

// commands reads INFO commandstats: calls per command since the last reset,
// without bench's own INFO and CONFIG RESETSTAT, and with the commands the
// boundary's scripts call set apart (they run inside EVALSHA, no round trip).
func (b *bench) commands(ctx context.Context, requests int) (results.Commands, error) {
	raw, err := b.cl.rdb.Info(ctx, "commandstats").Result()
	c := parseCommandStats(raw, scriptCommands())
	c.Requests = requests
	return c, err
}

var scriptCall = regexp.MustCompile(`redis\.p?call\(\s*['"]([A-Za-z]+)['"]`)

// scriptCommands returns the (lower-case) names of the commands that the
// boundary's scripts (package lua) call.
func scriptCommands() map[string]bool {
	out := map[string]bool{}
	for _, m := range scriptCall.FindAllStringSubmatch(lua.Begin()+lua.Complete()+lua.Release()+lua.Extend(), -1) {
		out[strings.ToLower(m[1])] = true
	}
	return out
}

// parseCommandStats sorts the calls of INFO commandstats into round trips
// and calls from inside scripts, leaving out bench's own INFO and CONFIG
// RESETSTAT.
func parseCommandStats(raw string, inScripts map[string]bool) results.Commands {
	c := results.Commands{ByCommand: map[string]int{}, InScripts: map[string]int{}}
	for name, n := range redisinfo.Calls(raw) {
		switch {
		case name == "info" || name == "config|resetstat":
		case inScripts[name]:
			c.InScripts[name] = int(n)
		default:
			c.ByCommand[name] = int(n)
			c.Total += int(n)
		}
	}
	return c
}

// floor measures pkg/idem's own Begin+Complete on the services' Redis, one
// call at a time on fresh keys (named <run>-<n>, merchant "floor"): the two
// round trips the api's boundary cannot do without. It returns the latency
// percentiles of FloorOps calls after floorWarmup unmeasured ones, back to
// back, and the timings of their Begin and Complete apart.
func (b *bench) floor(ctx context.Context, run string) (f results.Floor, begin, complete results.Timing, err error) {
	lat, begins, completes, err := b.floorCalls(ctx, run, b.cfg.FloorOps, 0)
	if err != nil {
		return f, begin, complete, err
	}
	slices.Sort(lat)
	return results.Floor{Ops: len(lat), P50MS: lat[len(lat)/2], P99MS: lat[len(lat)*99/100]}, timing(begins), timing(completes), nil
}

// pacedFloor is the floor's Begin and Complete paced as one api replica
// sees them in a latency round (LatencyRate/2 calls a second: bench's two
// replicas share the rate), n calls: what the two round trips cost when
// Redis and the client idle between them.
func (b *bench) pacedFloor(ctx context.Context, run string, n int) (begin, complete results.Timing, err error) {
	gap := 2 * time.Second / time.Duration(max(b.cfg.LatencyRate, 1))
	_, begins, completes, err := b.floorCalls(ctx, run+"-paced", n, gap)
	return timing(begins), timing(completes), err
}

// floorCalls makes floorWarmup unmeasured, then n measured Begin+Complete
// calls on fresh keys, gap apart, and returns each call's time in ms, and
// its Begin's and Complete's.
func (b *bench) floorCalls(ctx context.Context, run string, n int, gap time.Duration) (lat, begins, completes []float64, err error) {
	const floorWarmup = 100 // the connection open, the scripts loaded
	s := idem.New(b.cl.rdb, idem.Config{Retention: time.Minute})
	result := []byte(`{"status":202,"body":"eyJpZCI6InBheV8xIn0="}`)
	for i := range floorWarmup + n {
		k, err := idem.NewKey("floor", fmt.Sprintf("%s-%d", run, i))
		if err != nil {
			return nil, nil, nil, err
		}
		if gap > 0 && i >= floorWarmup {
			time.Sleep(gap)
		}
		t0 := time.Now()
		c, err := s.Begin(ctx, k, "api", "fp")
		t1 := time.Now()
		if err == nil && c.Outcome != idem.Acquired {
			err = fmt.Errorf("begin of a fresh key: %v, want Acquired", c.Outcome)
		}
		if err == nil {
			err = c.Lease.Complete(ctx, result)
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("floor: %w", err)
		}
		if i >= floorWarmup {
			t2 := time.Now()
			lat = append(lat, float64(t2.Sub(t0))/1e6)
			begins, completes = append(begins, float64(t1.Sub(t0))/1e6), append(completes, float64(t2.Sub(t1))/1e6)
		}
	}
	return lat, begins, completes, nil
}

// timing is the count, mean and p50 of ms.
func timing(ms []float64) results.Timing {
	if len(ms) == 0 {
		return results.Timing{}
	}
	sum := 0.0
	for _, v := range ms {
		sum += v
	}
	return results.Timing{N: len(ms), MeanMS: sum / float64(len(ms)), P50MS: results.Median(ms)}
}
