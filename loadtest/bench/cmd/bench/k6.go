package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/oncepay/oncepay/internal/proc"
)

// k6Summary is what loadtest/bench/k6/bench.js writes at the end.
type k6Summary struct {
	Accepted int            `json:"accepted"`
	Replayed int            `json:"replayed"`
	Failed   int            `json:"failed"`
	FailedBy map[string]int `json:"failed_by"` // 0 (transport), 409, 4xx, 503, 5xx
	Dropped  int            `json:"dropped"`
	P50MS    float64        `json:"lat_p50_ms"`
	P99MS    float64        `json:"lat_p99_ms"`
	CPU      float64        `json:"-"` // seconds of CPU k6 used
}

// k6 runs bench.js with env (TARGETS, MODE, LOAD, RATE, VUS, DURATION,
// ITERATIONS, KEYS, RUN) and returns its summary; every, if set, is called
// once a second while k6 runs.
func (b *bench) k6(ctx context.Context, name string, timeout time.Duration, env map[string]string, every func()) (k6Summary, error) {
	dir := filepath.Join(b.cfg.Out, "k6")
	_ = os.MkdirAll(dir, 0o755)
	summary := filepath.Join(dir, name+".json")
	_ = os.Remove(summary)
	argv := []string{b.cfg.K6, "run", "--quiet", "--no-usage-report", "--address", "", "-e", "SUMMARY=" + summary}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		argv = append(argv, "-e", k+"="+env[k])
	}
	argv = append(argv, filepath.Join(b.cfg.Repo, "loadtest", "bench", "k6", "bench.js"))
	var (
		r   proc.Result
		err error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r, err = b.command(ctx, "k6-"+name, timeout, dir, nil, argv...)
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-tick.C:
			if every != nil {
				every()
			}
		}
	}
	var s k6Summary
	if err != nil {
		return s, err
	}
	raw, err := os.ReadFile(summary)
	if err != nil {
		return s, fmt.Errorf("k6 %s wrote no summary: %w", name, err)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, fmt.Errorf("k6 %s summary: %w", name, err)
	}
	s.CPU = r.CPU.Seconds()
	return s, nil
}
