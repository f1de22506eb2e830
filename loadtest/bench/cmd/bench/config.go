package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// config is everything bench reads from its environment, once.
type config struct {
	Repo   string          // BENCH_REPO, default the working directory
	Out    string          // BENCH_OUT, default <repo>/.run/bench/runs/<UTC time>
	Quick  bool            // BENCH_QUICK=1: about 3 minutes instead of about 15
	Phases map[string]bool // BENCH_PHASES, default go,e2e
	// Peer (BENCH_PEER) is the peer phase's results JSON, read when it
	// exists; default <repo>/.run/bench/peer/results.json.
	Peer string

	RedisURL string // REDIS_URL of the bench harness (database 0 is used by the e2e services)
	AdminDB  string // DATABASE_URL of the bench harness; bench creates its own databases next to it
	AMQPURL  string // AMQP_URL of the bench harness
	// HarnessDir is the bench harness's state directory
	// ($ONCEPAY_RUN_DIR/harness), where its servers' pid files are.
	HarnessDir string

	K6, Benchstat string // tools: BENCH_K6, BENCH_BENCHSTAT

	GoCount           int           // BENCH_GO_COUNT, default 8 (6 quick)
	GoBenchtime       string        // BENCH_GO_BENCHTIME, default 1s (300ms quick)
	Phase             time.Duration // length of one e2e phase (12s, 6s quick)
	Sustain           time.Duration // length of one sustained run (60s, 20s quick)
	Repeats           int           // BENCH_REPEATS: e2e rounds (3, 1 quick)
	SustainTries      int           // sustained runs per copy (4, 2 quick)
	FloorOps          int           // pkg/idem Begin+Complete calls per floor measurement (2000, 500 quick)
	SatVUs            int           // BENCH_SAT_VUS: k6 clients at saturation (32)
	LatencyRate       int           // BENCH_LATENCY_RATE: requests/s of the latency rounds (100)
	WorkerConcurrency int           // BENCH_WORKER_CONCURRENCY (32; the worker's default is 8)
	// PortBase (BENCH_PORT_BASE, default 9180): the services listen on
	// PortBase to PortBase+9, their ops listeners 20 higher.
	PortBase   int
	PSPLatency string        // BENCH_PSP_LATENCY (50ms, as scripts/local)
	Limit      time.Duration // the whole run is cancelled after this (25m, 8m quick)
}

var allPhases = []string{"go", "e2e"}

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
	c := config{Quick: getenv("BENCH_QUICK") == "1" || getenv("BENCH_QUICK") == "true"}
	wd, _ := os.Getwd()
	c.Repo, _ = filepath.Abs(str("BENCH_REPO", wd))
	c.Out = str("BENCH_OUT", filepath.Join(c.Repo, ".run", "bench", "runs", now.UTC().Format("20060102T150405Z")))
	c.Phases = map[string]bool{}
	for _, p := range strings.Split(str("BENCH_PHASES", strings.Join(allPhases, ",")), ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(allPhases, p) {
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
	c.Peer = str("BENCH_PEER", filepath.Join(c.Repo, ".run", "bench", "peer", "results.json"))

	c.GoCount, c.GoBenchtime = integer("BENCH_GO_COUNT", 8), str("BENCH_GO_BENCHTIME", "1s")
	c.Phase, c.Sustain, c.SustainTries, c.FloorOps = 12*time.Second, 60*time.Second, 4, 2000
	c.Repeats, c.Limit = integer("BENCH_REPEATS", 3), 25*time.Minute
	if c.Quick {
		c.GoCount, c.GoBenchtime = integer("BENCH_GO_COUNT", 6), str("BENCH_GO_BENCHTIME", "300ms")
		c.Phase, c.Sustain, c.SustainTries, c.FloorOps = 6*time.Second, 20*time.Second, 2, 500
		c.Repeats, c.Limit = integer("BENCH_REPEATS", 1), 8*time.Minute
	}
	if c.GoCount < 6 {
		fail("BENCH_GO_COUNT", "%d: at least 6 runs, so that the median means something", c.GoCount)
	}
	c.SatVUs = integer("BENCH_SAT_VUS", 32)
	c.LatencyRate = integer("BENCH_LATENCY_RATE", 100)
	c.WorkerConcurrency = integer("BENCH_WORKER_CONCURRENCY", 32)
	c.PortBase = integer("BENCH_PORT_BASE", 9180)
	c.PSPLatency = str("BENCH_PSP_LATENCY", "50ms")
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
