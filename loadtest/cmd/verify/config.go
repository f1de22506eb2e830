package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/oncepay/oncepay/pkg/service/dial"
)

// config is what verify reads from its flags and environment, once.
type config struct {
	RunDir      string          // -run-dir: records.log, faults.jsonl, summary.json, run.json in; report.json, report.txt, timeline.png out
	RunID       string          // -run-id, default run.json's
	PSPAdminURL string          // -psp-admin: the psp's admin listener
	PSPToken    string          // PSP_ADMIN_TOKEN, its bearer token
	Queue       string          // -queue
	RetryDelays []time.Duration // -retry-delays, as WORKER_RETRY_DELAYS
	Drain       time.Duration   // -drain: limit of the drain
	Faults      bool            // -faults: the run injected faults (invariant 6 applies)
	// RequireLanded is -require-landed: every fault must land where it was
	// aimed (make fault-matrix).
	RequireLanded bool
	K6Exit        int // -k6-exit: k6's exit status; not 0 fails the run
	// Logs are -logs: glob patterns of the services' JSON logs, read for
	// the payment stories of report.html (none: the stories go without).
	Logs        []string
	DatabaseURL string            // DATABASE_URL
	RedisMode   string            // REDIS_MODE: single (default), cluster or sentinel (package dial)
	RedisURL    string            // REDIS_URL
	RedisAddrs  map[string]string // REDIS_CLUSTER_ADDRS: the cluster nodes' announced addresses mapped to reachable ones (package dial)
	AMQPURL     string            // AMQP_URL: one URL or a cluster's nodes, comma-separated
}

// runInfo is run.json, written by the load-test runner.
type runInfo struct {
	RunID    string `json:"run_id"`
	Duration string `json:"duration"`
	Rate     int    `json:"rate"`
	Faults   bool   `json:"faults"`
	// Repro is the command that reruns the same load and fault plan.
	Repro string `json:"repro"`
}

func loadConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var delays string
	fs.StringVar(&c.RunDir, "run-dir", ".run/demo", "directory of the run's records; the report is written there too")
	fs.StringVar(&c.RunID, "run-id", "", "run id (default: run.json's run_id)")
	fs.StringVar(&c.PSPAdminURL, "psp-admin", "http://127.0.0.1:8092", "the psp simulator's admin listener (its token: PSP_ADMIN_TOKEN)")
	fs.StringVar(&c.Queue, "queue", "payments.charge", "the worker's queue (retry and dead-letter names derive from it)")
	fs.StringVar(&delays, "retry-delays", "1s,5s,30s", "the worker's WORKER_RETRY_DELAYS")
	fs.DurationVar(&c.Drain, "drain", 2*time.Minute, "how long to wait for payments to settle after the load")
	fs.BoolVar(&c.Faults, "faults", true, "the run injected faults: fail unless one landed mid-request")
	fs.BoolVar(&c.RequireLanded, "require-landed", false, "fail on any fault that did not land where it was aimed")
	fs.IntVar(&c.K6Exit, "k6-exit", 0, "k6's exit status (99: a threshold was crossed); not 0 fails the run")
	var logs string
	fs.StringVar(&logs, "logs", "", "comma-separated glob patterns of the services' JSON logs, for the payment stories of report.html")
	if err := fs.Parse(args[1:]); err != nil {
		return config{}, err
	}
	var problems []error
	for _, p := range strings.Split(logs, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if _, err := filepath.Match(p, ""); err != nil {
			problems = append(problems, fmt.Errorf("-logs: %q: %w", p, err))
		}
		c.Logs = append(c.Logs, p)
	}
	if fs.NArg() > 0 {
		problems = append(problems, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	for _, d := range strings.Split(delays, ",") {
		v, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil || v <= 0 {
			problems = append(problems, fmt.Errorf("-retry-delays: %q is not a positive duration", d))
			continue
		}
		c.RetryDelays = append(c.RetryDelays, v)
	}
	if c.Drain <= 0 {
		problems = append(problems, errors.New("-drain must be positive"))
	}
	c.DatabaseURL, c.RedisURL, c.AMQPURL = getenv("DATABASE_URL"), getenv("REDIS_URL"), getenv("AMQP_URL")
	c.PSPToken = getenv("PSP_ADMIN_TOKEN")
	c.RedisMode = cmp.Or(getenv("REDIS_MODE"), dial.RedisSingle)
	addrs, err := dial.ParseClusterAddrs(getenv("REDIS_CLUSTER_ADDRS"))
	if err != nil {
		problems = append(problems, fmt.Errorf("REDIS_CLUSTER_ADDRS: %w", err))
	}
	c.RedisAddrs = addrs
	if c.RedisURL != "" {
		if err := dial.CheckRedisTuned(c.RedisMode, c.RedisURL, dial.RedisTuning{ClusterAddrs: c.RedisAddrs}); err != nil {
			problems = append(problems, fmt.Errorf("REDIS_MODE %s, REDIS_URL: %w", c.RedisMode, err))
		}
	}
	if c.AMQPURL != "" {
		if _, err := dial.ParseAMQP(c.AMQPURL); err != nil {
			problems = append(problems, fmt.Errorf("AMQP_URL: %w", err))
		}
	}
	for name, v := range map[string]string{"DATABASE_URL": c.DatabaseURL, "REDIS_URL": c.RedisURL, "AMQP_URL": c.AMQPURL, "PSP_ADMIN_TOKEN": c.PSPToken} {
		if v == "" {
			problems = append(problems, fmt.Errorf("%s is required (eval \"$(scripts/local env)\")", name))
		}
	}
	if c.RunID == "" {
		info, err := readRunInfo(c.RunDir)
		switch {
		case err != nil:
			problems = append(problems, err)
		case info.RunID == "":
			problems = append(problems, fmt.Errorf("%s has no run_id", filepath.Join(c.RunDir, "run.json")))
		default:
			c.RunID = info.RunID
		}
	}
	if len(problems) > 0 {
		return config{}, fmt.Errorf("configuration: %w", errors.Join(problems...))
	}
	return c, nil
}

func readRunInfo(dir string) (runInfo, error) {
	var info runInfo
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return info, fmt.Errorf("run info (give -run-id or run the load first): %w", err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("%s: %w", filepath.Join(dir, "run.json"), err)
	}
	return info, nil
}
