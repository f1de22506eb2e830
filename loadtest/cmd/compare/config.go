package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/compare"
	"github.com/oncepay/oncepay/pkg/idem/naive"
)

// defaultStrategies are compared unless -strategies says otherwise: every
// strategy except lock-then-check+key, then the two Postgres rows. Each
// pattern with a fresh psp key has its +key row beside it, and off (no
// boundary, propagated key) is there, so that the table separates what the
// Redis pattern causes from what the psp key causes; the Postgres rows
// separate what asynchronous replication causes in a failover.
const defaultStrategies = "oncepay,get-then-set,get-then-set+key,setnx-marker,setnx-marker+key,lock-then-check,api-only,no-backstop,off," +
	compare.PatroniSync + "," + compare.PatroniAsync

// row is one run of the experiment: a strategy on the runtime's topology
// under compare's fault schedule, or a Postgres row (oncepay on the ha
// topology under its own plan, compare.Postgres).
type row struct {
	Name     string
	Strategy naive.Strategy    // the api's and the workers' IDEM_STRATEGY
	Postgres *compare.Postgres // nil: a strategy's row
}

// parseRow reads one -strategies entry.
func parseRow(name string) (row, error) {
	if p, ok := compare.PostgresRow(name); ok {
		return row{Name: name, Strategy: naive.StrategyOncepay, Postgres: &p}, nil
	}
	s, err := naive.ParseStrategy(name)
	if err != nil {
		return row{}, fmt.Errorf("%w, or a Postgres row (%s, %s)", err, compare.PatroniSync, compare.PatroniAsync)
	}
	return row{Name: string(s), Strategy: s}, nil
}

// config is what compare reads from its flags, once.
type config struct {
	Repo         string        // -repo: the repository root (scripts/local, loadtest/run)
	Rows         []row         // -strategies, in table order
	Duration     time.Duration // -duration: the load of each run
	Rate         int           // -rate: steady payments per second
	Seed         int           // -seed: k6's and the fault schedule's, and the psp's fault RNG
	Drain        time.Duration // -drain: the verifier's drain limit
	KillEvery    string        // -kill-every: the gap between kills ("" = the driver's default)
	PSPFailAfter float64       // -psp-fail-after: share of psp charges whose answer is dropped
	Out          string        // -out: where the runs and the table go
	ReportOnly   bool          // -report-only: rebuild the table from the runs in -out
	Ready        []string      // -ready: the api and worker addresses whose /readyz must show the strategy
	FaultdAddr   string        // where loadtest/run starts the fault driver: FAULTD_ADDR (127.0.0.1:8099)
	// Topology is the strategies' rows' TOPOLOGY: the environment's, else
	// the one the local runtime last ran with (LocalDir/topology), else
	// single. The Postgres rows run on ha.
	Topology string
	LocalDir string // the local runtime's state: ONCEPAY_LOCAL_DIR (<repo>/.run/local)
}

// loadConfig reads the flags, and from getenv LOCAL_PORT_BASE (8080, as
// scripts/local: api-1 base, worker-1 base+1, api-2 base+2, worker-2
// base+3, psp base+10), ONCEPAY_LOCAL_DIR and TOPOLOGY, as scripts/local
// does, and FAULTD_ADDR, as loadtest/run does. readFile reads the
// runtime's last topology.
func loadConfig(args []string, getenv func(string) string, readFile func(string) ([]byte, error), stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var strategies, ready string
	var problems []error
	base := 8080
	if v := getenv("LOCAL_PORT_BASE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 65525 {
			problems = append(problems, fmt.Errorf("LOCAL_PORT_BASE %q is not a port", v))
		} else {
			base = n
		}
	}
	c.FaultdAddr = cmp.Or(getenv("FAULTD_ADDR"), "127.0.0.1:8099")
	fs.StringVar(&c.Repo, "repo", ".", "repository root")
	fs.StringVar(&strategies, "strategies", defaultStrategies, "comma-separated strategies, in table order")
	fs.DurationVar(&c.Duration, "duration", 60*time.Second, "load duration of each run")
	fs.IntVar(&c.Rate, "rate", 30, "steady payments per second")
	fs.IntVar(&c.Seed, "seed", 1, "seed of the load, the fault schedule and the psp's faults")
	fs.DurationVar(&c.Drain, "drain", 60*time.Second, "drain limit after the load")
	fs.StringVar(&c.KillEvery, "kill-every", "", "gap between kills (default: the fault driver's)")
	fs.Float64Var(&c.PSPFailAfter, "psp-fail-after", 0.01, "share of psp charges whose answer is dropped after charging (0 to disable)")
	fs.StringVar(&c.Out, "out", ".run/compare", "output directory")
	fs.BoolVar(&c.ReportOnly, "report-only", false, "do not run; rebuild the table and chart from the runs in -out")
	fs.StringVar(&ready, "ready", fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", base+4, base+6, base+1, base+3),
		"ops addresses (/readyz) of the local runtime's apis and workers")
	if err := fs.Parse(args[1:]); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		problems = append(problems, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	seen := map[string]bool{}
	for _, name := range strings.Split(strategies, ",") {
		r, err := parseRow(strings.TrimSpace(name))
		switch {
		case err != nil:
			problems = append(problems, fmt.Errorf("-strategies: %w", err))
		case seen[r.Name]:
			problems = append(problems, fmt.Errorf("-strategies: %s appears twice", r.Name))
		default:
			seen[r.Name] = true
			c.Rows = append(c.Rows, r)
		}
	}
	if c.Duration < 60*time.Second {
		problems = append(problems, fmt.Errorf("-duration %s: the fault schedule needs 60s or more", c.Duration))
	}
	if c.Rate < 1 {
		problems = append(problems, errors.New("-rate must be positive"))
	}
	if c.Drain <= 0 {
		problems = append(problems, errors.New("-drain must be positive"))
	}
	if c.KillEvery != "" {
		if d, err := time.ParseDuration(c.KillEvery); err != nil || d <= 0 {
			problems = append(problems, fmt.Errorf("-kill-every %q is not a positive duration", c.KillEvery))
		}
	}
	if !(c.PSPFailAfter >= 0 && c.PSPFailAfter <= 1) {
		problems = append(problems, errors.New("-psp-fail-after must be between 0 and 1"))
	}
	for _, a := range strings.Split(ready, ",") {
		if a = strings.TrimSpace(a); a != "" {
			c.Ready = append(c.Ready, a)
		}
	}
	var err error
	if c.Repo, err = filepath.Abs(c.Repo); err != nil {
		problems = append(problems, err)
	}
	if !filepath.IsAbs(c.Out) {
		c.Out = filepath.Join(c.Repo, c.Out)
	}
	c.LocalDir = cmp.Or(getenv("ONCEPAY_LOCAL_DIR"), filepath.Join(c.Repo, ".run/local"))
	c.Topology = getenv("TOPOLOGY")
	if c.Topology == "" {
		b, _ := readFile(filepath.Join(c.LocalDir, "topology"))
		c.Topology = cmp.Or(strings.TrimSpace(string(b)), "single")
	}
	if c.Topology != "single" && c.Topology != "ha" {
		problems = append(problems, fmt.Errorf("TOPOLOGY %q: want single or ha", c.Topology))
	}
	if len(problems) > 0 {
		return config{}, fmt.Errorf("configuration: %w", errors.Join(problems...))
	}
	return c, nil
}
