package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// goLine is one result line of BenchmarkMiddleware.
var goLine = regexp.MustCompile(`(?m)^BenchmarkMiddleware/mode=(\w+)/callers=(\d+)-\d+\s+\d+\s+([\d.]+) ns/op\s+([\d.]+) cpu-ns/op\s+([\d.]+) B/op\s+([\d.]+) allocs/op`)

// goPoint is one run of one sub-benchmark.
type goPoint struct{ NsPerOp, CPUNsPerOp, BytesPerOp, AllocsPerOp float64 }

// goBench is what BenchmarkMiddleware measured.
type goBench struct {
	Runs      int                  `json:"runs"`
	Samples   map[string][]goPoint `json:"samples"` // by "mode/callers"
	Benchstat string               `json:"benchstat"`
}

// runGoBench runs the idemhttp test binary count times, BenchmarkMiddleware
// only, one run of every mode after another (interleaved), on the run's
// Redis, then asks benchstat for its table (modes side by side).
func runGoBench(ctx context.Context, testBin, benchstat string, count int, redisURL, out string) (*goBench, error) {
	g := &goBench{Runs: count, Samples: map[string][]goPoint{}}
	var all strings.Builder
	for range count {
		cmd := exec.CommandContext(ctx, testBin, "-test.run", "^$", "-test.bench", "^BenchmarkMiddleware$",
			"-test.benchmem", "-test.count", "1", "-test.benchtime", "1s")
		cmd.Env = append(os.Environ(), "REDIS_URL="+redisURL)
		b, err := cmd.CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("%s: %w\n%s", testBin, err, b)
		}
		all.Write(b)
		for _, m := range goLine.FindAllStringSubmatch(string(b), -1) {
			var p goPoint
			p.NsPerOp, _ = strconv.ParseFloat(m[3], 64)
			p.CPUNsPerOp, _ = strconv.ParseFloat(m[4], 64)
			p.BytesPerOp, _ = strconv.ParseFloat(m[5], 64)
			p.AllocsPerOp, _ = strconv.ParseFloat(m[6], 64)
			g.Samples[m[1]+"/"+m[2]] = append(g.Samples[m[1]+"/"+m[2]], p)
		}
	}
	raw := filepath.Join(out, "go-bench.txt")
	if err := os.WriteFile(raw, []byte(all.String()), 0o644); err != nil {
		return nil, err
	}
	if benchstat != "" {
		b, err := exec.CommandContext(ctx, benchstat, "-col", "/mode", raw).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("benchstat: %w\n%s", err, b)
		}
		g.Benchstat = string(b)
	}
	return g, nil
}

// markdown renders the medians and the ratios of the middleware to direct.
func (g *goBench) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "BenchmarkMiddleware, medians of %d interleaved runs (time: wall ns/op; CPU: the process's cpu-ns/op):\n\n", g.Runs)
	b.WriteString("| callers | direct time | middleware time | ratio | direct CPU | middleware CPU | ratio | handler alone time / CPU | allocs/op direct / middleware / handler alone |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	us := func(ns float64) string { return strconv.FormatFloat(ns/1000, 'f', 1, 64) + " µs" }
	ratio := func(a, b float64) string {
		if b == 0 {
			return "–"
		}
		return strconv.FormatFloat(a/b, 'f', 2, 64) + "×"
	}
	ns := func(p goPoint) float64 { return p.NsPerOp }
	cpu := func(p goPoint) float64 { return p.CPUNsPerOp }
	al := func(p goPoint) float64 { return p.AllocsPerOp }
	for _, c := range concurrencies {
		d, m, h := g.Samples[fmt.Sprintf("direct/%d", c)], g.Samples[fmt.Sprintf("middleware/%d", c)], g.Samples[fmt.Sprintf("handler/%d", c)]
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s / %s | %.0f / %.0f / %.0f |\n", c,
			us(median(d, ns)), us(median(m, ns)), ratio(median(m, ns), median(d, ns)),
			us(median(d, cpu)), us(median(m, cpu)), ratio(median(m, cpu), median(d, cpu)),
			us(median(h, ns)), us(median(h, cpu)), median(d, al), median(m, al), median(h, al))
	}
	if g.Benchstat != "" {
		b.WriteString("\nbenchstat -col /mode:\n\n```text\n" + g.Benchstat + "```\n")
	}
	return b.String()
}
