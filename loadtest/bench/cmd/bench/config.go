package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/results"
)

// config is everything bench reads from its environment, once; the
// variables are listed in docs/PERFORMANCE.md.
type config struct {
	results.Settings                 // the knobs the results record
	Repo             string          // the working directory: the repository root
	Out              string          // BENCH_OUT, default <repo>/.run/bench/runs/<UTC time>
	Quick            bool            // BENCH_QUICK=1: about 4 minutes instead of about 15
	Phases           map[string]bool // BENCH_PHASES: some of go,e2e,overload
	Base             string          // BENCH_BASE: the overload phase's base ref; empty: git merge-base HEAD main
	OverloadSeconds  int             // BENCH_OVERLOAD_SECONDS: each overload step, default 60 (quick 20)
	OverloadFactors  []float64       // offered load / capacity of the overload steps
	Peer             string          // BENCH_PEER: the peer phase's results JSON, read when it exists
	Pprof            bool            // BENCH_PPROF=1: services serve net/http/pprof on their port + 40
	// LoadCPUs (BENCH_LOAD_CPUS, a taskset CPU list) runs k6 and the psp
	// on these CPUs only, so that the load generator and the provider
	// stand-in do not take the system's processor; empty: no pinning.
	LoadCPUs string

	RedisURL, AdminDB, AMQPURL string // the bench harness's REDIS_URL, DATABASE_URL and AMQP_URL
	HarnessDir                 string // $ONCEPAY_RUN_DIR/harness: its servers' pid files
	K6, Benchstat              string // <repo>/bin/k6 and bin/benchstat

	SustainTries int // sustained runs per copy
	FloorOps     int // pkg/idem Begin+Complete calls per floor measurement
	PortBase     int // BENCH_PORT_BASE: services on base to base+9, ops listeners 20 higher
	// PatroniPortBase (BENCH_PATRONI_PORT_BASE, default BENCH_PORT_BASE+60)
	// is the first of the 18 ports of BENCH_PG=patroni's cluster.
	PatroniPortBase int
	Limit           time.Duration // the whole run is cancelled after this
}

// cpuList is taskset's CPU list syntax: numbers and ranges, comma-separated.
var cpuList = regexp.MustCompile(`^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$`)

// loadConfig reads the configuration and reports every problem at once.
func loadConfig(getenv func(string) string, now time.Time) (config, error) {
	var problems []error
	str := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	integer := func(name string, def int) int {
		n, err := strconv.Atoi(str(name, strconv.Itoa(def)))
		if err != nil || n <= 0 {
			problems = append(problems, fmt.Errorf("%s: %q is not a positive integer", name, getenv(name)))
			return def
		}
		return n
	}
	quick := getenv("BENCH_QUICK") == "1" || getenv("BENCH_QUICK") == "true"
	pick := func(full, q int) int { return map[bool]int{false: full, true: q}[quick] }
	wd, _ := os.Getwd()
	run := filepath.Join(wd, ".run", "bench")
	c := config{Repo: wd, Quick: quick, Phases: map[string]bool{}, Pprof: getenv("BENCH_PPROF") == "1",
		Out:      str("BENCH_OUT", filepath.Join(run, "runs", now.UTC().Format("20060102T150405Z"))),
		Peer:     str("BENCH_PEER", filepath.Join(run, "peer", "results.json")),
		RedisURL: getenv("REDIS_URL"), AdminDB: getenv("DATABASE_URL"), AMQPURL: getenv("AMQP_URL"),
		HarnessDir: filepath.Join(str("ONCEPAY_RUN_DIR", run), "harness"),
		K6:         filepath.Join(wd, "bin", "k6"), Benchstat: filepath.Join(wd, "bin", "benchstat"),
		Settings: results.Settings{
			GoCount: integer("BENCH_GO_COUNT", pick(8, 6)), GoBenchtime: str("BENCH_GO_BENCHTIME", map[bool]string{false: "1s", true: "300ms"}[quick]),
			PhaseSeconds: pick(12, 6), SustainSeconds: pick(60, 20), Repeats: integer("BENCH_REPEATS", pick(3, 1)),
			SaturationVUs: integer("BENCH_SAT_VUS", 32), LatencyRate: integer("BENCH_LATENCY_RATE", 100),
			LatencyPairs: integer("BENCH_LATENCY_PAIRS", pick(8, 6)), LatencySlice: pick(5, 4),
			WorkerConcurrency: integer("BENCH_WORKER_CONCURRENCY", 32), PSPLatency: str("BENCH_PSP_LATENCY", "50ms"),
		},
		LoadCPUs: getenv("BENCH_LOAD_CPUS"),
		Base:     getenv("BENCH_BASE"), OverloadSeconds: integer("BENCH_OVERLOAD_SECONDS", pick(60, 20)), OverloadFactors: []float64{1.5, 2},
		SustainTries: pick(4, 2), FloorOps: pick(2000, 500), PortBase: integer("BENCH_PORT_BASE", 9180),
		Limit: time.Duration(pick(25, 8)) * time.Minute,
	}
	c.Postgres = getenv("BENCH_PG")
	if c.Postgres != "" && c.Postgres != "patroni" {
		problems = append(problems, fmt.Errorf("BENCH_PG: %q: want empty (the harness's one node) or patroni", c.Postgres))
	}
	c.PatroniPortBase = integer("BENCH_PATRONI_PORT_BASE", c.PortBase+60)
	for _, p := range strings.Split(str("BENCH_PHASES", "go,e2e"), ",") {
		if p = strings.TrimSpace(p); p != "go" && p != "e2e" && p != "overload" {
			problems = append(problems, fmt.Errorf("BENCH_PHASES: unknown phase %q (want some of go,e2e,overload)", p))
		}
		c.Phases[p] = true
	}
	for name, v := range map[string]string{"REDIS_URL": c.RedisURL, "DATABASE_URL": c.AdminDB, "AMQP_URL": c.AMQPURL} {
		if v == "" {
			problems = append(problems, fmt.Errorf("%s: is required (run bench under scripts/harness run; make bench does)", name))
		}
	}
	if c.LoadCPUs != "" && !cpuList.MatchString(c.LoadCPUs) {
		problems = append(problems, fmt.Errorf("BENCH_LOAD_CPUS: %q is not a CPU list (for example 1 or 2-3)", c.LoadCPUs))
	}
	if c.GoCount < 6 {
		problems = append(problems, fmt.Errorf("BENCH_GO_COUNT: %d: at least 6 runs, so that the median means something", c.GoCount))
	}
	return c, errors.Join(problems...)
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
