package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/oncepay/oncepay/loadtest/bench/results"
)

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

// parseCommandStats reads lines like
// cmdstat_evalsha:calls=2000,usec=...,usec_per_call=...,rejected_calls=0,failed_calls=0
// and sorts them into round trips and calls from inside scripts.
func parseCommandStats(raw string, inScripts map[string]bool) results.Commands {
	c := results.Commands{ByCommand: map[string]int{}, InScripts: map[string]int{}}
	for _, line := range strings.Split(raw, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		if name == "info" || name == "config|resetstat" {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				n, _ := strconv.Atoi(v)
				if inScripts[name] {
					c.InScripts[name] += n
					continue
				}
				c.ByCommand[name] += n
				c.Total += n
			}
		}
	}
	return c
}
