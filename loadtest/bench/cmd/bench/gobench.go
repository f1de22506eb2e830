package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/results"
)

var benchLine = regexp.MustCompile(`(?m)^Benchmark(\w+)-\d+\s+\d+\s+([\d.]+) ns/op\s+([\d.]+) B/op\s+([\d.]+) allocs/op`)

// goBenchmarks are the pkg/idem benchmarks bench runs. It leaves out
// BenchmarkBeginCompleteConcurrent, a one-off comparison with go-redis's
// auto-pipeliner (docs/PERFORMANCE.md), which takes longer than the rest.
const goBenchmarks = "^Benchmark(BeginComplete|BeginReplay|RawEvalSha|Keep)$"

// goBench runs the pkg/idem benchmarks GoCount times, one run of all of
// them after another, so that a slow moment of the shared machine hits every
// benchmark alike; then takes the medians and asks benchstat for its table.
func (b *bench) goBench(ctx context.Context) error {
	b.phase("go benchmarks")
	g := &results.GoBench{Runs: b.cfg.GoCount, Samples: map[string][]results.GoPoint{}}
	raw := filepath.Join(b.cfg.Out, "go-bench.txt")
	var all strings.Builder
	env := []string{"REDIS_URL=" + b.cfg.RedisURL}
	dir := filepath.Join(b.cfg.Repo, "pkg", "idem")
	for i := range b.cfg.GoCount {
		r, err := b.command(ctx, "go-bench", 3*time.Minute, dir, env, b.bin("idem.test"),
			"-test.run", "^$", "-test.bench", goBenchmarks, "-test.benchmem", "-test.count", "1", "-test.benchtime", b.cfg.GoBenchtime)
		if err != nil {
			return err
		}
		all.WriteString(r.Out)
		for _, m := range benchLine.FindAllStringSubmatch(r.Out, -1) {
			var p results.GoPoint
			fmt.Sscan(m[2]+" "+m[3]+" "+m[4], &p.NsPerOp, &p.BytesPerOp, &p.AllocsPerOp)
			g.Samples[m[1]] = append(g.Samples[m[1]], p)
		}
		b.logf("go run %d/%d done", i+1, b.cfg.GoCount)
	}
	if err := os.WriteFile(raw, []byte(all.String()), 0o644); err != nil {
		return err
	}
	// -col .name: BeginReplay and RawEvalSha against BeginComplete, with p-values.
	stat, err := b.command(ctx, "benchstat", time.Minute, b.cfg.Out, nil, b.cfg.Benchstat, "-col", ".name", raw)
	if err != nil {
		return err
	}
	g.Benchstat = stat.Out
	b.res.Go = g
	return nil
}
