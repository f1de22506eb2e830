// Package peer measures pkg/idem against the idempotency library people
// would pick instead: AWS Powertools for TypeScript's idempotency utility on
// its Redis persistence layer (node/). Both run, one cell after another, on
// a private redis-server with AOF everysec, at each concurrency, fresh and
// replay; every cell records ops/s, p50/p99, the client process's CPU per
// operation, Redis's CPU per operation and Redis commands per operation.
// Rounds are interleaved and the summary is their median.
package peer

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/cpu"
)

// Libraries, as named in results.
const (
	LibIdem          = "idem"              // pkg/idem as configured by default (its own batching)
	LibIdemUnbatched = "idem-unbatched"    // pkg/idem with Config.Unbatched: one call per pooled connection
	LibIdemAuto      = "idem-autopipeline" // pkg/idem, unbatched, on go-redis's AutoPipeline
	LibPeer          = "powertools"        // AWS Powertools idempotency, CachePersistenceLayer, @redis/client
)

// Operations.
const (
	OpFresh  = "fresh"  // a new key: claim, then store the result
	OpReplay = "replay" // a completed key: return the stored result
)

// Config is one bench-peer run.
type Config struct {
	RedisServer string        // path of redis-server
	Port        int           // the private Redis's port
	NodeDir     string        // the Node project (node/), npm ci already done
	Self        []string      // argv that runs the Go client: Self + "client" + flags
	Libs        []string      // libraries to run
	Concurrency []int         // concurrencies to run
	Ops         []string      // operations to run
	Rounds      int           // interleaved rounds; the summary is their median
	Duration    time.Duration // measured window per cell
	Warmup      time.Duration // unmeasured warm-up per cell
	Log         io.Writer     // progress lines
}

// Cell is one measured window.
type Cell struct {
	Lib         string           `json:"lib"`
	Op          string           `json:"op"`
	Concurrency int              `json:"concurrency"`
	Round       int              `json:"round"`
	Client      ClientResult     `json:"client"`
	RedisCPUs   float64          `json:"redis_cpu_s"`
	Calls       map[string]int64 `json:"redis_calls"`
	Metrics
}

// Metrics are a cell's derived numbers (or the median over rounds).
type Metrics struct {
	OpsPerSec     float64 `json:"ops_per_s"`
	P50ms         float64 `json:"p50_ms"`
	P99ms         float64 `json:"p99_ms"`
	ClientCPUus   float64 `json:"client_cpu_us_per_op"`
	RedisCPUus    float64 `json:"redis_cpu_us_per_op"`
	TotalCPUus    float64 `json:"total_cpu_us_per_op"`
	RedisCmds     float64 `json:"redis_commands_per_op"` // every command Redis ran, scripts' included
	RedisRequests float64 `json:"redis_requests_per_op"` // commands clients sent
}

// Summary is the median of one (lib, op, concurrency) over rounds.
type Summary struct {
	Lib         string `json:"lib"`
	Op          string `json:"op"`
	Concurrency int    `json:"concurrency"`
	Metrics
}

// Results is what a run writes to results.json.
type Results struct {
	Started  time.Time         `json:"started"`
	Finished time.Time         `json:"finished"`
	Machine  Machine           `json:"machine"`
	Versions map[string]string `json:"versions"`
	Rounds   int               `json:"rounds"`
	Duration string            `json:"duration"`
	Cells    []Cell            `json:"cells"`
	Summary  []Summary         `json:"summary"`
	Targets  []Target          `json:"targets"`
}

// Machine says what else ran: the load average before and after.
type Machine struct {
	CPUs          int    `json:"cpus"`
	LoadAvgBefore string `json:"loadavg_before"`
	LoadAvgAfter  string `json:"loadavg_after"`
}

// Run runs every cell Rounds times, interleaved (each round runs every
// library for a cell before the next cell, in an order rotated per round),
// and returns the results with medians and targets.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	res := &Results{Started: time.Now().UTC(), Rounds: cfg.Rounds, Duration: cfg.Duration.String(), Versions: versions(cfg)}
	res.Machine.CPUs = numCPU()
	res.Machine.LoadAvgBefore = loadAvg()
	total := cfg.Rounds * len(cfg.Ops) * len(cfg.Concurrency) * len(cfg.Libs)
	n := 0
	for round := range cfg.Rounds {
		for _, op := range cfg.Ops {
			for _, c := range cfg.Concurrency {
				libs := slices.Clone(cfg.Libs)
				rot := round % len(libs)
				libs = append(libs[rot:], libs[:rot]...)
				for _, lib := range libs {
					n++
					cell, err := runCell(ctx, cfg, lib, op, c, round)
					if err != nil {
						return nil, fmt.Errorf("round %d %s %s c=%d: %w", round+1, lib, op, c, err)
					}
					fmt.Fprintf(cfg.Log, "bench-peer: [%d/%d] round %d %-6s c=%-3d %-15s %8.0f ops/s  p50 %.2f ms  cpu %.1f+%.1f µs/op  %.1f cmds/op  (load %s)\n",
						n, total, round+1, op, c, lib, cell.OpsPerSec, cell.P50ms, cell.ClientCPUus, cell.RedisCPUus, cell.RedisCmds, loadAvg())
					res.Cells = append(res.Cells, cell)
				}
			}
		}
	}
	res.Finished = time.Now().UTC()
	res.Machine.LoadAvgAfter = loadAvg()
	res.Summary = summarize(res.Cells)
	res.Targets = targets(res.Summary)
	return res, nil
}

func runCell(ctx context.Context, cfg Config, lib, op string, c, round int) (Cell, error) {
	cell := Cell{Lib: lib, Op: op, Concurrency: c, Round: round + 1}
	srv, err := startRedis(ctx, cfg.RedisServer, cfg.Port)
	if err != nil {
		return cell, err
	}
	defer srv.stop()

	flags := []string{
		"-addr", "127.0.0.1:" + strconv.Itoa(cfg.Port), "-c", strconv.Itoa(c), "-op", op,
		"-duration", strconv.FormatFloat(cfg.Duration.Seconds(), 'f', -1, 64),
		"-warmup", strconv.FormatFloat(cfg.Warmup.Seconds(), 'f', -1, 64),
		"-prefix", fmt.Sprintf("r%d", round+1),
	}
	// The client speaks a line protocol over its stdin and stdout, which
	// internal/proc does not offer; it is killed when the cell returns.
	var cmd *exec.Cmd
	if lib == LibPeer {
		cmd = exec.CommandContext(ctx, "node", append([]string{filepath.Join(cfg.NodeDir, "client.mjs")}, flags...)...)
		cmd.Dir = cfg.NodeDir
	} else {
		argv := append(slices.Clone(cfg.Self), append([]string{"client", "-lib", lib}, flags...)...)
		cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	}
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return cell, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return cell, err
	}
	if err := cmd.Start(); err != nil {
		return cell, fmt.Errorf("client: %w", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		return cell, fmt.Errorf("client did not get ready (%q, %v)", lines.Text(), lines.Err())
	}
	s0, err := srv.snapshot(ctx)
	if err != nil {
		return cell, err
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		return cell, err
	}
	if !lines.Scan() {
		return cell, fmt.Errorf("client gave no result: %v", lines.Err())
	}
	s1, err := srv.snapshot(ctx)
	if err != nil {
		return cell, err
	}
	if err := json.Unmarshal(lines.Bytes(), &cell.Client); err != nil {
		return cell, fmt.Errorf("client result %q: %w", lines.Text(), err)
	}
	if cell.Client.Ops == 0 || cell.Client.Errors > 0 {
		return cell, fmt.Errorf("client: %d ops, %d errors", cell.Client.Ops, cell.Client.Errors)
	}
	cell.RedisCPUs = s1.cpu - s0.cpu
	cell.Calls = map[string]int64{}
	for name, n := range s1.calls {
		if d := n - s0.calls[name]; d > 0 && name != "info" {
			cell.Calls[name] = d
		}
	}
	cell.Metrics = derive(cell)
	return cell, nil
}

func derive(c Cell) Metrics {
	ops := float64(c.Client.Ops)
	m := Metrics{
		OpsPerSec:   ops / c.Client.Seconds,
		P50ms:       c.Client.P50ms,
		P99ms:       c.Client.P99ms,
		ClientCPUus: c.Client.CPUs / ops * 1e6,
		RedisCPUus:  c.RedisCPUs / ops * 1e6,
	}
	m.TotalCPUus = m.ClientCPUus + m.RedisCPUus
	for name, n := range c.Calls {
		m.RedisCmds += float64(n) / ops
		if requestCommands[name] {
			m.RedisRequests += float64(n) / ops
		}
	}
	return m
}

func summarize(cells []Cell) []Summary {
	type id struct {
		lib, op string
		c       int
	}
	groups := map[id][]Metrics{}
	var order []id
	for _, c := range cells {
		k := id{c.Lib, c.Op, c.Concurrency}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], c.Metrics)
	}
	var out []Summary
	for _, k := range order {
		ms := groups[k]
		med := func(f func(Metrics) float64) float64 {
			v := make([]float64, len(ms))
			for i, m := range ms {
				v[i] = f(m)
			}
			return median(v)
		}
		out = append(out, Summary{Lib: k.lib, Op: k.op, Concurrency: k.c, Metrics: Metrics{
			OpsPerSec:     med(func(m Metrics) float64 { return m.OpsPerSec }),
			P50ms:         med(func(m Metrics) float64 { return m.P50ms }),
			P99ms:         med(func(m Metrics) float64 { return m.P99ms }),
			ClientCPUus:   med(func(m Metrics) float64 { return m.ClientCPUus }),
			RedisCPUus:    med(func(m Metrics) float64 { return m.RedisCPUus }),
			TotalCPUus:    med(func(m Metrics) float64 { return m.TotalCPUus }),
			RedisCmds:     med(func(m Metrics) float64 { return m.RedisCmds }),
			RedisRequests: med(func(m Metrics) float64 { return m.RedisRequests }),
		}})
	}
	slices.SortStableFunc(out, func(a, b Summary) int {
		if a.Op != b.Op {
			return strings.Compare(a.Op, b.Op)
		}
		return a.Concurrency - b.Concurrency
	})
	return out
}

// median of v (v is reordered).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func loadAvg() string {
	la := cpu.LoadAvg()
	return fmt.Sprintf("%.2f %.2f %.2f", la[0], la[1], la[2])
}
