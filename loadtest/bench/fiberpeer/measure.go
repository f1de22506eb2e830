package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

type config struct {
	redisPort int
	window    time.Duration
	rounds    int
	keys      int
	only      string
	out       string
	goTest    string // the idemhttp test binary, or "": no Go benchmark
	goCount   int
	benchstat string
}

// concurrencies are the client counts measured.
var concurrencies = []int{1, 64}

// body is every request's body.
const body = `{"amount":1250,"currency":"EUR","customer_id":"cus_42"}`

// server is one variant's running process.
type server struct {
	v    variant
	cmd  *exec.Cmd
	addr string // the server
	ops  string // its GET /heap and /debug/pprof/profile
}

// sample is one measurement of one variant at one concurrency.
type sample struct {
	Requests      int     `json:"requests"`
	Errors        int     `json:"errors"`
	Seconds       float64 `json:"seconds"`
	PerSecond     float64 `json:"per_second"`
	ServerCPUus   float64 `json:"server_cpu_us_per_request"`
	RedisCPUus    float64 `json:"redis_cpu_us_per_request"`
	LatencyP50us  float64 `json:"latency_p50_us"`
	LoadAvgBefore float64 `json:"loadavg_1m_before"`
}

// memory is what a variant holds per key.
type memory struct {
	Keys            int     `json:"keys"`
	HeapPerKey      float64 `json:"heap_bytes_per_key"`
	RedisPerKey     float64 `json:"redis_used_memory_per_key"`
	RedisKeysPerKey float64 `json:"redis_keys_per_request"`
	KeyUsage        int64   `json:"redis_memory_usage_of_one_key"`
}

type variantResult struct {
	Name    string           `json:"name"`
	Samples map[int][]sample `json:"samples"` // by concurrency
	Memory  memory           `json:"memory"`
}

type results struct {
	Started   time.Time       `json:"started"`
	Window    string          `json:"window"`
	Rounds    int             `json:"rounds"`
	CPUs      int             `json:"cpus"`
	GoVersion string          `json:"go_version"`
	LoadAvg   [2]float64      `json:"loadavg_1m_start_end"`
	Variants  []variantResult `json:"variants"`
	Go        *goBench        `json:"go_bench,omitempty"`
}

func measure(ctx context.Context, cfg config, stdout io.Writer) error {
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	rs, err := startRedis(ctx, cfg.redisPort)
	if err != nil {
		return err
	}
	defer rs.stop()
	redisURL := fmt.Sprintf("redis://127.0.0.1:%d/0", cfg.redisPort)
	res := &results{Started: time.Now().UTC(), Window: cfg.window.String(), Rounds: cfg.rounds,
		CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	res.LoadAvg[0] = loadAvg()
	logf := func(format string, a ...any) { fmt.Fprintf(stdout, time.Now().Format("15:04:05 ")+format+"\n", a...) }
	if cfg.goTest != "" {
		logf("BenchmarkMiddleware, %d runs", cfg.goCount)
		if res.Go, err = runGoBench(ctx, cfg.goTest, cfg.benchstat, cfg.goCount, redisURL, cfg.out); err != nil {
			return err
		}
	}
	servers := make([]*server, len(variants))
	defer func() {
		for _, s := range servers {
			if s != nil {
				s.stop()
			}
		}
	}()
	if cfg.only != "" {
		variants = slices.DeleteFunc(slices.Clone(variants), func(v variant) bool { return !strings.Contains(v.name, cfg.only) })
		servers = servers[:len(variants)]
	}
	for i, v := range variants {
		if servers[i], err = startServer(v, redisURL); err != nil {
			return err
		}
		res.Variants = append(res.Variants, variantResult{Name: v.name, Samples: map[int][]sample{}})
		logf("%s: pid %d on %s, pprof and heap on %s", v.name, servers[i].cmd.Process.Pid, servers[i].addr, servers[i].ops)
	}
	client := newClient()
	for i, s := range servers {
		if err := checkReplay(ctx, client, s); err != nil {
			return fmt.Errorf("%s: %w", variants[i].name, err)
		}
	}
	var run atomic.Int64        // unique keys across every load
	for i, s := range servers { // warm up: connections, pools, lazy initialisation
		if _, err := load(ctx, client, s, 16, time.Second, &run, rs.rdb); err != nil {
			return fmt.Errorf("warm up %s: %w", variants[i].name, err)
		}
	}
	for r := range cfg.rounds {
		for _, c := range concurrencies {
			// Interleaved: each round starts with another variant, so that
			// a slow moment of the shared machine does not hit one alone.
			for j := range servers {
				i := (j + r) % len(servers)
				smp, err := load(ctx, client, servers[i], c, cfg.window, &run, rs.rdb)
				if err != nil {
					return fmt.Errorf("%s at c=%d: %w", variants[i].name, c, err)
				}
				res.Variants[i].Samples[c] = append(res.Variants[i].Samples[c], smp)
				logf("round %d c=%-2d %-30s %8.0f req/s %7.1f µs CPU/req (+ Redis %5.1f) errors %d",
					r+1, c, variants[i].name, smp.PerSecond, smp.ServerCPUus, smp.RedisCPUus, smp.Errors)
			}
		}
	}
	for i, s := range servers {
		m, err := memoryPerKey(ctx, client, s, cfg.keys, &run, rs.rdb)
		if err != nil {
			return fmt.Errorf("memory of %s: %w", variants[i].name, err)
		}
		res.Variants[i].Memory = m
		logf("memory %-30s heap %6.0f B/key, Redis %6.0f B/key", variants[i].name, m.HeapPerKey, m.RedisPerKey)
	}
	res.LoadAvg[1] = loadAvg()
	b, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(filepath.Join(cfg.out, "results.json"), b, 0o644); err != nil {
		return err
	}
	report := res.markdown()
	if err := os.WriteFile(filepath.Join(cfg.out, "report.md"), []byte(report), 0o644); err != nil {
		return err
	}
	fmt.Fprint(stdout, "\n"+report)
	return nil
}

func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns: 256, MaxIdleConnsPerHost: 128, MaxConnsPerHost: 128,
		DisableCompression: true, IdleConnTimeout: time.Minute,
	}, Timeout: 10 * time.Second}
}

// load sends new keys from c clients for d and measures the server.
func load(ctx context.Context, client *http.Client, s *server, c int, d time.Duration, run *atomic.Int64, rdb *redis.Client) (sample, error) {
	smp := sample{LoadAvgBefore: loadAvg()}
	cpu0, err := procCPU(s.cmd.Process.Pid)
	if err != nil {
		return smp, err
	}
	rcpu0, err := redisCPU(ctx, rdb)
	if err != nil {
		return smp, err
	}
	start := time.Now()
	deadline := start.Add(d)
	var (
		mu        sync.Mutex
		latencies []time.Duration
		wg        sync.WaitGroup
		firstErr  error
	)
	for w := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			ok, bad := 0, 0
			var werr error
			for time.Now().Before(deadline) && ctx.Err() == nil {
				key := fmt.Sprintf("%08x-%04x-4000-8000-%012x", run.Add(1), w, 0)
				t := time.Now()
				status, err := post(ctx, client, s.addr, key)
				if err != nil {
					werr = err
					break
				}
				lat = append(lat, time.Since(t))
				if status == http.StatusCreated {
					ok++
				} else {
					bad++
				}
			}
			mu.Lock()
			defer mu.Unlock()
			latencies = append(latencies, lat...)
			smp.Requests += ok
			smp.Errors += bad
			if werr != nil && firstErr == nil {
				firstErr = werr
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return smp, firstErr
	}
	cpu1, err := procCPU(s.cmd.Process.Pid)
	if err != nil {
		return smp, err
	}
	rcpu1, err := redisCPU(ctx, rdb)
	if err != nil {
		return smp, err
	}
	smp.Seconds = elapsed.Seconds()
	if smp.Requests == 0 {
		return smp, fmt.Errorf("no request answered 201 (%d other answers)", smp.Errors)
	}
	n := float64(smp.Requests + smp.Errors)
	smp.PerSecond = float64(smp.Requests) / smp.Seconds
	smp.ServerCPUus = (cpu1 - cpu0).Seconds() * 1e6 / n
	smp.RedisCPUus = (rcpu1 - rcpu0) * 1e6 / n
	slices.Sort(latencies)
	smp.LatencyP50us = float64(latencies[len(latencies)/2].Microseconds())
	return smp, nil
}

// checkReplay sends one key twice to s: a server with a middleware must
// replay the first answer (its X-Run), one without must run twice; and a
// server that keeps its keys in Redis must have written there.
func checkReplay(ctx context.Context, client *http.Client, s *server) error {
	key := fmt.Sprintf("%08x-0000-4000-8000-%012x", 0xffffffff, time.Now().UnixNano()&0xffffffffffff)
	var got [2]string
	for i := range got {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.addr+"/orders", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("check: answer %d, want 201", resp.StatusCode)
		}
		got[i] = resp.Header.Get("X-Run")
	}
	if replayed := got[0] == got[1]; replayed != s.v.idem {
		return fmt.Errorf("check: runs %q then %q with one key: the middleware is not what the variant says", got[0], got[1])
	}
	return nil
}

func post(ctx context.Context, client *http.Client, addr, key string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/orders", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// memoryPerKey sends keys new keys (16 clients) and returns the growth of
// the server's live heap and of Redis's used_memory per key.
func memoryPerKey(ctx context.Context, client *http.Client, s *server, keys int, run *atomic.Int64, rdb *redis.Client) (memory, error) {
	m := memory{Keys: keys}
	heap0, err := s.heap(ctx)
	if err != nil {
		return m, err
	}
	used0, n0, err := redisMemory(ctx, rdb, s.v.db)
	if err != nil {
		return m, err
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(keys) {
				key := fmt.Sprintf("%08x-%04x-4000-8000-%012x", run.Add(1), w, 1)
				if status, err := post(ctx, client, s.addr, key); err != nil || status != http.StatusCreated {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("answer %d: %v", status, err)
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return m, firstErr
	}
	heap1, err := s.heap(ctx)
	if err != nil {
		return m, err
	}
	used1, n1, err := redisMemory(ctx, rdb, s.v.db)
	if err != nil {
		return m, err
	}
	m.HeapPerKey = (float64(heap1) - float64(heap0)) / float64(keys)
	if s.v.redis {
		if n1-n0 < int64(keys) {
			return m, fmt.Errorf("%d new keys sent, %d written to Redis database %d", keys, n1-n0, s.v.db)
		}
		m.RedisPerKey = (float64(used1) - float64(used0)) / float64(keys)
		m.RedisKeysPerKey = float64(n1-n0) / float64(keys)
		c := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, DB: s.v.db})
		defer c.Close()
		if k, err := c.RandomKey(ctx).Result(); err == nil {
			m.KeyUsage, _ = c.MemoryUsage(ctx, k).Result()
		}
	}
	return m, nil
}

func (s *server) heap(ctx context.Context) (uint64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.ops+"/heap", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strconv.ParseUint(string(b), 10, 64)
}

// startServer starts v in its own process (this program's serve).
func startServer(v variant, redisURL string) (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "serve", "-variant", v.name, "-redis", redisURL)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{v: v, cmd: cmd}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("start %s: %w", v.name, err)
	}
	addrs := strings.Fields(line)
	if len(addrs) != 2 {
		s.stop()
		return nil, fmt.Errorf("start %s: it printed %q", v.name, line)
	}
	s.addr, s.ops = addrs[0], addrs[1]
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return s, nil
}

// stop ends the server's process (SIGTERM, then SIGKILL after 5 s).
func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}
