package peer

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
)

// Target is one of issue 22's ratios against the peer, for one pkg/idem
// library.
type Target struct {
	Name  string  `json:"name"`
	Lib   string  `json:"lib"`
	Ratio float64 `json:"ratio"` // pkg/idem over the peer
	Want  string  `json:"want"`
	Met   bool    `json:"met"`
}

// targets computes, for every pkg/idem library, at concurrency 64: fresh
// total CPU/op ≤ 0.8× the peer's and ops/s ≥ 1.2×; replay ops/s ≥ 2× and
// total CPU/op ≤ 0.6×.
func targets(sum []Summary) []Target {
	var out []Target
	for _, lib := range []string{LibIdem, LibIdemUnbatched, LibIdemAuto} {
		for _, t := range []struct {
			name, op string
			ratio    func(a, p *Summary) float64
			want     string
			met      func(float64) bool
		}{
			{"fresh c=64 CPU/op", OpFresh, func(a, p *Summary) float64 { return a.TotalCPUus / p.TotalCPUus }, "≤ 0.8", func(r float64) bool { return r <= 0.8 }},
			{"fresh c=64 ops/s", OpFresh, func(a, p *Summary) float64 { return a.OpsPerSec / p.OpsPerSec }, "≥ 1.2", func(r float64) bool { return r >= 1.2 }},
			{"replay c=64 ops/s", OpReplay, func(a, p *Summary) float64 { return a.OpsPerSec / p.OpsPerSec }, "≥ 2", func(r float64) bool { return r >= 2 }},
			{"replay c=64 CPU/op", OpReplay, func(a, p *Summary) float64 { return a.TotalCPUus / p.TotalCPUus }, "≤ 0.6", func(r float64) bool { return r <= 0.6 }},
		} {
			a, ok1 := Find(sum, lib, t.op, 64)
			p, ok2 := Find(sum, LibPeer, t.op, 64)
			if !ok1 || !ok2 {
				continue
			}
			r := t.ratio(&a, &p)
			out = append(out, Target{Name: t.name, Lib: lib, Ratio: r, Want: t.want, Met: t.met(r)})
		}
	}
	return out
}

// Find returns the summary of lib in op at concurrency c, if sum has it.
func Find(sum []Summary, lib, op string, c int) (Summary, bool) {
	for _, s := range sum {
		if s.Lib == lib && s.Op == op && s.Concurrency == c {
			return s, true
		}
	}
	return Summary{}, false
}

// Load reads a results.json that a run wrote.
func Load(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

func numCPU() int { return runtime.NumCPU() }

// versions records what ran: Node, the peer's packages as installed, Redis
// and go-redis.
func versions(cfg Config) map[string]string {
	v := map[string]string{}
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		v["node"] = strings.TrimSpace(string(out))
	}
	for name, pkg := range map[string]string{
		"powertools_idempotency": "@aws-lambda-powertools/idempotency",
		"redis_client":           "@redis/client",
	} {
		b, err := os.ReadFile(filepath.Join(cfg.NodeDir, "node_modules", pkg, "package.json"))
		if err != nil {
			continue
		}
		var p struct{ Version string }
		if json.Unmarshal(b, &p) == nil {
			v[name] = p.Version
		}
	}
	if out, err := exec.Command(cfg.RedisServer, "--version").Output(); err == nil {
		v["redis"] = strings.TrimSpace(string(out))
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v["go"] = bi.GoVersion
		for _, d := range bi.Deps {
			if d.Path == "github.com/redis/go-redis/v9" {
				v["go_redis"] = d.Version
			}
		}
	}
	return v
}
