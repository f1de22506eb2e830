package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/oncepay/oncepay/internal/proc"
	"github.com/oncepay/oncepay/loadtest/compare"
	"github.com/oncepay/oncepay/pkg/idem/naive"
)

// runtime drives the local runtime through its own scripts: scripts/local
// (up, down, env), scripts/harness (patroni down --purge) and loadtest/run
// (chaos, matrix). Their output goes to log.
type runtime struct {
	repo string
	log  io.Writer
	// topology is the strategies' rows' TOPOLOGY; localDir the runtime's
	// state directory (config).
	topology, localDir string
}

// rowEnv is what the scripts need to run r: its strategy, and its
// topology and Patroni settings.
func (rt runtime) rowEnv(r row) []string {
	env := []string{"IDEM_STRATEGY=" + string(r.Strategy)}
	if r.Postgres != nil {
		return append(env, r.Postgres.Env()...)
	}
	return append(env, "TOPOLOGY="+rt.topology)
}

// up starts the local runtime for r; scripts/local restarts the api and
// worker processes whose configuration changed.
func (rt runtime) up(ctx context.Context, r row) error {
	return rt.run(ctx, rt.rowEnv(r), 10*time.Minute, "scripts/local", "up")
}

// fresh stops the local runtime, whatever its topology, and deletes the
// state of its Postgres under Patroni: Patroni keeps the replication
// settings a cluster was bootstrapped with, so the next ha start
// bootstraps one with the settings it is given.
func (rt runtime) fresh(ctx context.Context) error {
	// TOPOLOGY empty: scripts/local stops the topology it last ran with
	if err := rt.run(ctx, []string{"TOPOLOGY="}, 5*time.Minute, "scripts/local", "down"); err != nil {
		return err
	}
	return rt.run(ctx, []string{"ONCEPAY_RUN_DIR=" + rt.localDir}, 5*time.Minute, "scripts/harness", "patroni", "down", "--purge")
}

// chaos runs the experiment of r into dir: loadtest/run chaos (compare's
// fault schedule) for a strategy, loadtest/run matrix restricted to
// compare.PostgresKinds for a Postgres row. Its exit status is not an
// error here: a run with violations exits 1, and that is what compare is
// about. The run is judged by dir/report.json, which loadtest/run writes
// fresh.
func (rt runtime) chaos(ctx context.Context, r row, dir string, c config) error {
	env := append(rt.rowEnv(r), "RUN_DIR="+dir, "DURATION="+c.Duration.String(),
		fmt.Sprintf("RATE=%d", c.Rate), fmt.Sprintf("SEED=%d", c.Seed), "DRAIN="+c.Drain.String(),
		"KILL_EVERY="+c.KillEvery,
		// the run's repro: the psp's faults are part of the plan, and only compare sets them
		fmt.Sprintf("REPRO=make compare COMPARE_STRATEGIES=%s COMPARE_DURATION=%s COMPARE_RATE=%d COMPARE_DRAIN=%s COMPARE_SEED=%d COMPARE_PSP_FAIL_AFTER=%g",
			r.Name, c.Duration, c.Rate, c.Drain, c.Seed, c.PSPFailAfter),
	)
	mode := "chaos"
	if r.Postgres != nil {
		mode = "matrix"
		env = append(env, "MATRIX_KINDS="+strings.Join(compare.PostgresKinds, ","))
	}
	err := rt.run(ctx, env, c.Duration+c.Drain+15*time.Minute, "loadtest/run", mode)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if exit := (*exec.ExitError)(nil); err == nil || errors.As(err, &exit) {
		return nil
	}
	return err
}

// env returns the runtime's service addresses, from scripts/local env.
func (rt runtime) env(ctx context.Context) (map[string]string, error) {
	r, err := proc.Run(ctx, proc.Spec{Name: "scripts/local env", Argv: []string{filepath.Join(rt.repo, "scripts/local"), "env"}, Dir: rt.repo}, time.Minute)
	if err != nil {
		return nil, err
	}
	return parseExports([]byte(r.Out)), nil
}

// parseExports reads `export NAME='value'` lines.
func parseExports(b []byte) map[string]string {
	env := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "export ")
		if !ok {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		env[name] = strings.Trim(value, `'"`)
	}
	return env
}

// run runs the repository's script (a path relative to the repository)
// with args and env added, its output going to rt.log, within timeout.
func (rt runtime) run(ctx context.Context, env []string, timeout time.Duration, script string, args ...string) error {
	_, err := proc.Run(ctx, proc.Spec{
		Name: script + " " + strings.Join(args, " "), Argv: append([]string{filepath.Join(rt.repo, script)}, args...),
		Env: env, Dir: rt.repo, Log: rt.log,
	}, timeout)
	return err
}

// checkStrategy waits until every address answers /readyz 200 and shows s
// (a demonstration strategy in details, the real one without), so that no
// run starts on processes still running the previous strategy.
func checkStrategy(ctx context.Context, addrs []string, s naive.Strategy, within time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(within)
	for _, addr := range addrs {
		var last string
		for {
			got, err := readyStrategy(ctx, client, addr)
			if err == nil && got == s {
				break
			}
			last = fmt.Sprintf("strategy %q, %v", got, err)
			if time.Now().After(deadline) {
				return fmt.Errorf("%s does not run %s after the restart (%s)", addr, s, last)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(300 * time.Millisecond):
			}
		}
	}
	return nil
}

func readyStrategy(ctx context.Context, client *http.Client, addr string) (naive.Strategy, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var rep struct {
		Details map[string]string `json:"details"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("readyz %s", resp.Status)
	}
	if s := rep.Details["idempotency_strategy"]; s != "" {
		return naive.Strategy(s), nil
	}
	return naive.StrategyOncepay, nil
}
