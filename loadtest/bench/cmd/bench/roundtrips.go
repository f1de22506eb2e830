package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/redisinfo"
	"github.com/oncepay/oncepay/loadtest/bench/results"
)

// roundTrips counts Redis commands per request, each phase after CONFIG
// RESETSTAT, while no worker runs (so that only the api talks to Redis);
// then starts the workers and counts the commands per charged payment.
func (b *bench) roundTrips(ctx context.Context, e *results.E2E, on, off *variant) error {
	b.phase("e2e: redis round trips")
	n := 2000
	if b.cfg.Quick {
		n = 500
	}
	count := func(name string, v *variant, env map[string]string, replay bool) (results.Commands, error) {
		if err := b.resetStats(ctx); err != nil {
			return results.Commands{}, err
		}
		env["TARGETS"], env["LOAD"], env["VUS"], env["ITERATIONS"], env["RUN"] = v.targets(), "count", "8", strconv.Itoa(n), name
		s, err := b.k6(ctx, name, 3*time.Minute, env, nil)
		if err != nil {
			return results.Commands{}, err
		}
		if s.Failed > 0 {
			b.note("%s: %d requests failed %v", name, s.Failed, s.FailedBy)
		}
		reqs := s.Accepted
		if replay {
			reqs = s.Replayed
		}
		return b.commands(ctx, reqs)
	}
	var err error
	if e.RoundTrips.Fresh, err = count("rt-fresh", on, map[string]string{"MODE": "fresh"}, false); err != nil {
		return err
	}
	if e.RoundTrips.Replay, err = count("rt-replay", on, map[string]string{"MODE": "replay", "KEYS_FROM": "rt-fresh", "KEYS": strconv.Itoa(n)}, true); err != nil {
		return err
	}
	if e.RoundTrips.Off, err = count("rt-off", off, map[string]string{"MODE": "fresh"}, false); err != nil {
		return err
	}
	e.OffHonoured = e.RoundTrips.Off.Requests > 0 && e.RoundTrips.Off.Total == 0
	if !e.OffHonoured {
		b.note("the api with IDEM_STRATEGY=off made %d Redis calls for %d requests: the strategy is not honoured (has IDEM_STRATEGY landed?); on/off ratios are not measured",
			e.RoundTrips.Off.Total, e.RoundTrips.Off.Requests)
	}
	b.logf("  per new request %.3f (%v), per replay %.3f (%v), off %.3f",
		e.RoundTrips.Fresh.PerRequest(), e.RoundTrips.Fresh.ByCommand,
		e.RoundTrips.Replay.PerRequest(), e.RoundTrips.Replay.ByCommand, e.RoundTrips.Off.PerRequest())

	// Both copies' workers charge the backlog on a reset counter: the
	// copy without the boundary makes no Redis call.
	if err := b.resetStats(ctx); err != nil {
		return err
	}
	for _, v := range []*variant{on, off} {
		if err := b.startWorkers(ctx, v); err != nil {
			return err
		}
	}
	b.drain(ctx, 2*time.Minute)
	settled, err := b.settled(ctx, on)
	if err != nil {
		return err
	}
	if e.RoundTrips.Charge, err = b.commands(ctx, settled); err != nil {
		return err
	}
	b.logf("  per charged payment (worker) %.3f (%v)", e.RoundTrips.Charge.PerRequest(), e.RoundTrips.Charge.ByCommand)
	return nil
}

// resetStats clears Redis's INFO commandstats (CONFIG RESETSTAT).
func (b *bench) resetStats(ctx context.Context) error {
	return b.cl.rdb.ConfigResetStat(ctx).Err()
}

// commands reads INFO commandstats: calls per command since the last reset,
// without bench's own INFO and CONFIG RESETSTAT, and with the commands the
// boundary's scripts call set apart (they run inside EVALSHA, no round trip).
func (b *bench) commands(ctx context.Context, requests int) (results.Commands, error) {
	raw, err := b.cl.rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return results.Commands{}, err
	}
	inner, err := scriptCommands(filepath.Join(b.cfg.Repo, "lua"))
	if err != nil {
		return results.Commands{}, err
	}
	c := parseCommandStats(raw, inner)
	c.Requests = requests
	return c, nil
}

var scriptCall = regexp.MustCompile(`redis\.p?call\(\s*['"]([A-Za-z]+)['"]`)

// scriptCommands returns the (lower-case) names of the commands that the
// scripts in dir call.
func scriptCommands(dir string) (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.lua"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no scripts in %s", dir)
	}
	out := map[string]bool{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, m := range scriptCall.FindAllStringSubmatch(string(src), -1) {
			out[strings.ToLower(m[1])] = true
		}
	}
	return out, nil
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
