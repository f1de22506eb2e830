package peer

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/cpu"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/redis/go-redis/v9"
)

// ClientConfig is one measured cell for a client process: what it runs and
// for how long. The Node client (node/client.mjs) takes the same flags.
type ClientConfig struct {
	Addr        string        // Redis address, host:port
	Lib         string        // LibIdem, LibIdemUnbatched or LibIdemAuto
	Op          string        // OpFresh or OpReplay
	Concurrency int           // callers at once
	Duration    time.Duration // measured window
	Warmup      time.Duration // unmeasured run before "ready"
	Prefix      string        // key prefix, unique per cell
}

// ClientResult is what a client process prints as its last line.
type ClientResult struct {
	Ops     int64   `json:"ops"`
	Errors  int64   `json:"errors"`
	Seconds float64 `json:"seconds"`
	P50ms   float64 `json:"p50_ms"`
	P99ms   float64 `json:"p99_ms"`
	CPUs    float64 `json:"cpu_s"` // utime + stime of the client process over the window
}

const replayKeys = 1024

// benchResult is the stored result, the same payment response the Node
// client stores.
var benchResult = []byte(`{"status":202,"body":"{\"id\":\"pay_01HZX0000000000000000000\",\"status\":\"pending\",\"amount\":1000,\"currency\":\"EUR\",\"customer_id\":\"cus_1\"}"}`)

var benchBody = []byte(`{"amount":1000,"currency":"EUR","customer_id":"cus_1","description":"bench"}`)

// RunClient is the Go client: it connects, prepares (replay: completes
// replayKeys keys), warms up, writes "ready" to stdout, waits for a line on
// stdin, runs cfg.Duration and writes one JSON ClientResult line.
func RunClient(ctx context.Context, cfg ClientConfig, stdin io.Reader, stdout io.Writer) error {
	rdb := redis.NewClient(&redis.Options{Addr: cfg.Addr, ContextTimeoutEnabled: true})
	defer rdb.Close()
	var scripter redis.Scripter = rdb
	icfg := idem.Config{Lease: 30 * time.Second, Retention: 24 * time.Hour}
	switch cfg.Lib {
	case LibIdem:
	case LibIdemUnbatched:
		icfg.Unbatched = true
	case LibIdemAuto:
		ap, err := rdb.AutoPipeline()
		if err != nil {
			return fmt.Errorf("autopipeline: %w", err)
		}
		defer ap.Close()
		scripter = ap // no Pipeline method: the store does not batch
	default:
		return fmt.Errorf("client: unknown library %q", cfg.Lib)
	}
	store := idem.New(scripter, icfg)

	var seq atomic.Int64
	key := func(tag string) (idem.Key, error) {
		n := seq.Add(1)
		if cfg.Op == OpReplay {
			return idem.NewKey("m1", cfg.Prefix+"-replay-"+strconv.FormatInt(n%replayKeys, 10))
		}
		return idem.NewKey("m1", cfg.Prefix+"-"+tag+"-"+strconv.FormatInt(n, 10))
	}
	one := func(tag string) error {
		k, err := key(tag)
		if err != nil {
			return err
		}
		fp, err := idem.Fingerprint("POST", "/v1/payments", benchBody)
		if err != nil {
			return err
		}
		c, err := store.Begin(ctx, k, "api", fp)
		if err != nil {
			return err
		}
		switch {
		case c.Outcome == idem.Acquired && cfg.Op == OpFresh:
			return c.Lease.Complete(ctx, benchResult)
		case c.Outcome == idem.Completed && cfg.Op == OpReplay:
			return nil
		}
		return fmt.Errorf("%s: unexpected outcome %v", cfg.Op, c.Outcome)
	}
	if cfg.Op == OpReplay {
		for i := range replayKeys {
			k, _ := idem.NewKey("m1", cfg.Prefix+"-replay-"+strconv.Itoa(i))
			fp, _ := idem.Fingerprint("POST", "/v1/payments", benchBody)
			c, err := store.Begin(ctx, k, "api", fp)
			if err != nil {
				return fmt.Errorf("prepare replay: %w", err)
			}
			if err := c.Lease.Complete(ctx, benchResult); err != nil {
				return fmt.Errorf("prepare replay: %w", err)
			}
		}
	}
	run := func(tag string, d time.Duration, lat *[]time.Duration) (ops, errs int64) {
		until := time.Now().Add(d)
		var mu sync.Mutex
		var wg sync.WaitGroup
		var firstErr sync.Once
		for range cfg.Concurrency {
			wg.Go(func() {
				var local []time.Duration
				var n, e int64
				for {
					t0 := time.Now()
					if !t0.Before(until) {
						break
					}
					if err := one(tag); err != nil {
						e++
						firstErr.Do(func() { fmt.Fprintln(os.Stderr, err) })
					} else {
						n++
					}
					if lat != nil {
						local = append(local, time.Since(t0))
					}
				}
				mu.Lock()
				defer mu.Unlock()
				ops += n
				errs += e
				if lat != nil {
					*lat = append(*lat, local...)
				}
			})
		}
		wg.Wait()
		return ops, errs
	}

	run("warm", cfg.Warmup, nil)
	fmt.Fprintln(stdout, "ready")
	if _, err := bufio.NewReader(stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("client: waiting for go: %w", err)
	}
	var lat []time.Duration
	self := map[string][]int{"client": {os.Getpid()}}
	cpu0 := cpu.Trees(self)["client"]
	t0 := time.Now()
	ops, errs := run("run", cfg.Duration, &lat)
	secs := time.Since(t0).Seconds()
	cpu1 := cpu.Trees(self)["client"]
	slices.Sort(lat)
	q := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / 1e6
	}
	return json.NewEncoder(stdout).Encode(ClientResult{
		Ops: ops, Errors: errs, Seconds: secs, P50ms: q(0.5), P99ms: q(0.99), CPUs: cpu1 - cpu0,
	})
}
