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

	"github.com/oncepay/oncepay/pkg/idem/naive"
)

// defaultStrategies are compared unless -strategies says otherwise: every
// strategy except lock-then-check+key. Each pattern with a fresh psp key
// has its +key row beside it, and off (no boundary, propagated key) is
// there, so that the table separates what the Redis pattern causes from
// what the psp key causes.
const defaultStrategies = "oncepay,get-then-set,get-then-set+key,setnx-marker,setnx-marker+key,lock-then-check,api-only,no-backstop,off"

// config is what compare reads from its flags, once.
type config struct {
	Repo         string           // -repo: the repository root (scripts/local, loadtest/run)
	Strategies   []naive.Strategy // -strategies, in table order
	Duration     time.Duration    // -duration: the load of each run
	Rate         int              // -rate: steady payments per second
	Seed         int              // -seed: k6's and the fault schedule's, and the psp's fault RNG
	Drain        time.Duration    // -drain: the verifier's drain limit
	KillEvery    string           // -kill-every: the gap between kills ("" = the driver's default)
	PSPFailAfter float64          // -psp-fail-after: share of psp charges whose answer is dropped
	Out          string           // -out: where the runs and the table go
	ReportOnly   bool             // -report-only: rebuild the table from the runs in -out
	Ready        []string         // -ready: the api and worker addresses whose /readyz must show the strategy
	FaultdAddr   string           // where loadtest/run starts the fault driver: FAULTD_ADDR (127.0.0.1:8099)
}

// loadConfig reads the flags, and from getenv LOCAL_PORT_BASE (8080, as
// scripts/local: api-1 base, worker-1 base+1, api-2 base+2, worker-2
// base+3, psp base+10) and FAULTD_ADDR, as loadtest/run does.
func loadConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
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
	seen := map[naive.Strategy]bool{}
	for _, name := range strings.Split(strategies, ",") {
		s, err := naive.ParseStrategy(strings.TrimSpace(name))
		switch {
		case err != nil:
			problems = append(problems, fmt.Errorf("-strategies: %w", err))
		case seen[s]:
			problems = append(problems, fmt.Errorf("-strategies: %s appears twice", s))
		default:
			seen[s] = true
			c.Strategies = append(c.Strategies, s)
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
	if len(problems) > 0 {
		return config{}, fmt.Errorf("configuration: %w", errors.Join(problems...))
	}
	return c, nil
}
