package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// config is everything bench reads from its environment, once.
type config struct {
	Repo   string          // BENCH_REPO, default the working directory
	Out    string          // BENCH_OUT, default <repo>/.run/bench/runs/<UTC time>
	Quick  bool            // BENCH_QUICK=1: about 3 minutes instead of about 15
	Phases map[string]bool // BENCH_PHASES, default go,ceilings,colocated,e2e

	RedisURL string // REDIS_URL of the bench harness (database 0 is used by the e2e services)
	AdminDB  string // DATABASE_URL of the bench harness; bench creates its own databases next to it
	AMQPURL  string // AMQP_URL of the bench harness
	// HarnessDir is the bench harness's state directory
	// ($ONCEPAY_RUN_DIR/harness), where its servers' pid files are.
	HarnessDir string

	K6, Benchstat, PGBench, RedisBenchmark string // tools: BENCH_K6, BENCH_BENCHSTAT, BENCH_PGBENCH, BENCH_REDIS_BENCHMARK

	GoCount           int           // BENCH_GO_COUNT, default 8 (6 quick)
	GoBenchtime       string        // BENCH_GO_BENCHTIME, default 1s (300ms quick)
	Step              time.Duration // length of one colocated step (12s, 6s quick)
	Phase             time.Duration // length of one e2e phase (12s, 6s quick)
	Sustain           time.Duration // length of one sustained run (60s, 20s quick)
	Repeats           int           // BENCH_REPEATS: colocated searches and e2e rounds (3, 1 quick)
	SatVUs            int           // BENCH_SAT_VUS: k6 clients at saturation (32)
	LatencyRate       int           // BENCH_LATENCY_RATE: requests/s of the latency rounds (100)
	WorkerConcurrency int           // BENCH_WORKER_CONCURRENCY (32; the worker's default is 8)
	PSPLatency        string        // BENCH_PSP_LATENCY (50ms, as scripts/local)
	Ceiling           float64       // BENCH_CEILING: colocated ceiling to use when that phase is skipped
	Limit             time.Duration // the whole run is cancelled after this (25m, 8m quick)
	// BaselineAPI (BENCH_BASELINE_API), when set, is another api binary: the
	// e2e phase then compares it, with the boundary on, against the api
	// built from this tree (an A/B run for a change), instead of the
	// boundary off.
	BaselineAPI string
	// Profile (BENCH_PROFILE=1) serves pprof from every api and worker and
	// takes CPU profiles during the first saturation round.
	Profile bool
}

var allPhases = []string{"go", "ceilings", "colocated", "e2e"}

func loadConfig(getenv func(string) string, now time.Time) (config, error) {
	var problems []error
	fail := func(name, format string, args ...any) {
		problems = append(problems, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	str := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	integer := func(name string, def int) int {
		v := getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			fail(name, "%q is not a positive integer", v)
			return def
		}
		return n
	}
	c := config{Quick: getenv("BENCH_QUICK") == "1" || getenv("BENCH_QUICK") == "true",
		Profile: getenv("BENCH_PROFILE") == "1" || getenv("BENCH_PROFILE") == "true"}
	wd, _ := os.Getwd()
	c.Repo, _ = filepath.Abs(str("BENCH_REPO", wd))
	c.Out = str("BENCH_OUT", filepath.Join(c.Repo, ".run", "bench", "runs", now.UTC().Format("20060102T150405Z")))
	c.Phases = map[string]bool{}
	for _, p := range strings.Split(str("BENCH_PHASES", strings.Join(allPhases, ",")), ",") {
		p = strings.TrimSpace(p)
		if !contains(allPhases, p) {
			fail("BENCH_PHASES", "unknown phase %q (want some of %s)", p, strings.Join(allPhases, ","))
		}
		c.Phases[p] = true
	}
	c.RedisURL, c.AdminDB, c.AMQPURL = getenv("REDIS_URL"), getenv("DATABASE_URL"), getenv("AMQP_URL")
	for name, v := range map[string]string{"REDIS_URL": c.RedisURL, "DATABASE_URL": c.AdminDB, "AMQP_URL": c.AMQPURL} {
		if v == "" {
			fail(name, "is required (run bench under scripts/harness run; make bench does)")
		}
	}
	c.HarnessDir = filepath.Join(str("ONCEPAY_RUN_DIR", filepath.Join(c.Repo, ".run", "bench")), "harness")
	c.K6 = str("BENCH_K6", filepath.Join(c.Repo, "bin", "k6"))
	c.Benchstat = str("BENCH_BENCHSTAT", filepath.Join(c.Repo, "bin", "benchstat"))
	c.PGBench = str("BENCH_PGBENCH", findPGBench())
	c.RedisBenchmark = str("BENCH_REDIS_BENCHMARK", "redis-benchmark")

	c.GoCount, c.GoBenchtime = integer("BENCH_GO_COUNT", 8), str("BENCH_GO_BENCHTIME", "1s")
	c.Step, c.Phase, c.Sustain = 12*time.Second, 12*time.Second, 60*time.Second
	c.Repeats, c.Limit = integer("BENCH_REPEATS", 3), 25*time.Minute
	if c.Quick {
		c.GoCount, c.GoBenchtime = integer("BENCH_GO_COUNT", 6), str("BENCH_GO_BENCHTIME", "300ms")
		c.Step, c.Phase, c.Sustain = 6*time.Second, 6*time.Second, 20*time.Second
		c.Repeats, c.Limit = integer("BENCH_REPEATS", 1), 8*time.Minute
	}
	if c.GoCount < 6 {
		fail("BENCH_GO_COUNT", "%d: at least 6 runs, so that the median means something", c.GoCount)
	}
	c.BaselineAPI = getenv("BENCH_BASELINE_API")
	if c.BaselineAPI != "" {
		if _, err := os.Stat(c.BaselineAPI); err != nil {
			fail("BENCH_BASELINE_API", "%v", err)
		}
	}
	c.SatVUs = integer("BENCH_SAT_VUS", 32)
	c.LatencyRate = integer("BENCH_LATENCY_RATE", 100)
	c.WorkerConcurrency = integer("BENCH_WORKER_CONCURRENCY", 32)
	c.PSPLatency = str("BENCH_PSP_LATENCY", "50ms")
	if v := getenv("BENCH_CEILING"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			fail("BENCH_CEILING", "%q is not a positive number", v)
		}
		c.Ceiling = f
	}
	if c.Phases["e2e"] && !c.Phases["colocated"] && c.Ceiling == 0 {
		fail("BENCH_CEILING", "is required when the e2e phase runs without the colocated one (the sustained rate is a fraction of it)")
	}
	return c, errors.Join(problems...)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// findPGBench looks for pgbench on PATH, then under /usr/lib/postgresql.
func findPGBench() string {
	for _, p := range append([]string{"/usr/local/bin/pgbench", "/usr/bin/pgbench"}, globDesc("/usr/lib/postgresql/*/bin/pgbench")...) {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	return "pgbench"
}

func globDesc(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	for i, j := 0, len(m)-1; i < j; i, j = i+1, j-1 {
		m[i], m[j] = m[j], m[i]
	}
	return m
}

// withDB returns the Postgres URL u with its database replaced by db.
func withDB(u, db string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	p.Path = "/" + db
	return p.String()
}

// redisAddr returns host and port of a redis:// URL.
func redisHostPort(u string) (string, string) {
	p, err := url.Parse(u)
	if err != nil {
		return "127.0.0.1", "6379"
	}
	return p.Hostname(), p.Port()
}
