package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/oncepay/oncepay/internal/proc"
)

// merchantKeys are the demo keys of scripts/local; bench.js uses merchant_a.
const merchantKeys = "merchant_a=sk_test_merchant_a_0123456789,merchant_b=sk_test_merchant_b_0123456789"

// variant is one copy of the pipeline: two api replicas and two workers
// with one IDEM_STRATEGY, on their own exchange and queue, sharing the psp,
// Redis, Postgres and RabbitMQ with the other copy. Each service listens on
// 127.0.0.1 at its port, its ops listener (/readyz, /metrics) 20 higher.
type variant struct {
	Name, Strategy        string // "on" or "off"; IDEM_STRATEGY
	APIs, Workers         []int  // ports
	Exchange, Queue       string
	Build                 string // suffix of the api's and workers' binaries: "" or "-compare"
	apiProcs, workerProcs []*proc.Proc
}

// addr is 127.0.0.1 at port.
func addr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// targets is the TARGETS value for bench.js.
func (v *variant) targets() string {
	var t []string
	for _, port := range v.APIs {
		t = append(t, "http://"+addr(port))
	}
	return strings.Join(t, ",")
}

// newVariants returns the two copies, on ports base to base+7; the psp
// listens on base+9.
func newVariants(base int) (on, off *variant) {
	on = &variant{Name: "on", Strategy: "oncepay", APIs: []int{base, base + 2}, Workers: []int{base + 1, base + 3},
		Exchange: "payments", Queue: "payments.charge"}
	off = &variant{Name: "off", Strategy: "off", APIs: []int{base + 4, base + 6}, Workers: []int{base + 5, base + 7},
		Exchange: "payments_off", Queue: "payments_off.charge", Build: "-compare"}
	return on, off
}

// startPSP starts the psp simulator with scripts/local's latency.
func (b *bench) startPSP(ctx context.Context) (*proc.Proc, error) {
	port := b.cfg.PortBase + 9
	p, err := b.start("psp", []string{b.bin("psp")}, []string{"PSP_LISTEN_ADDR=" + addr(port), "PSP_OPS_ADDR=" + addr(port+20),
		"PSP_DATABASE_URL=" + withDB(b.cfg.AdminDB, dbPSP), "PSP_LATENCY=" + b.cfg.PSPLatency, "PSP_LATENCY_JITTER=25ms",
		"PSP_SHUTDOWN_GRACE=10s", "LOG_LEVEL=info"})
	if err != nil {
		return nil, err
	}
	return p, b.waitReady(ctx, p, port+20)
}

// startAPIs starts the copy's api replicas and waits until they are ready.
func (b *bench) startAPIs(ctx context.Context, v *variant) (err error) {
	v.apiProcs, err = b.startReplicas(ctx, v, "api", v.APIs, 20, func(name string, port int) []string {
		return []string{"API_LISTEN_ADDR=" + addr(port), "API_OPS_ADDR=" + addr(port+20), "API_MERCHANT_KEYS=" + merchantKeys,
			"API_INSTANCE=" + name, "IDEM_LEASE=10s", "SHUTDOWN_GRACE=10s"}
	})
	return err
}

// startWorkers starts the copy's workers and waits until they are ready.
func (b *bench) startWorkers(ctx context.Context, v *variant) (err error) {
	v.workerProcs, err = b.startReplicas(ctx, v, "worker", v.Workers, 0, func(name string, port int) []string {
		return []string{"WORKER_LISTEN_ADDR=" + addr(port), "WORKER_INSTANCE=" + name, "PSP_URL=http://" + addr(b.cfg.PortBase+9),
			"IDEM_LEASE=15s", "WORKER_RETRY_DELAYS=1s,5s,15s", "SHUTDOWN_GRACE=20s",
			"WORKER_CONCURRENCY=" + strconv.Itoa(b.cfg.WorkerConcurrency), "WORKER_PREFETCH=" + strconv.Itoa(2*b.cfg.WorkerConcurrency)}
	})
	return err
}

// startReplicas starts program once per port, named <program>-<copy>-<n>,
// with the copy's shared settings and env(name, port), then waits until
// each answers /readyz at port+readyOffset.
func (b *bench) startReplicas(ctx context.Context, v *variant, program string, ports []int, readyOffset int,
	env func(name string, port int) []string) ([]*proc.Proc, error) {
	var ps []*proc.Proc
	for i, port := range ports {
		name := fmt.Sprintf("%s-%s-%d", program, v.Name, i+1)
		p, err := b.start(name, []string{b.bin(program + v.Build)}, append(env(name, port), "REDIS_URL="+b.cfg.RedisURL,
			"DATABASE_URL="+withDB(b.cfg.AdminDB, dbE2E), "AMQP_URL="+b.cfg.AMQPURL, "AMQP_EXCHANGE="+v.Exchange,
			"AMQP_QUEUE="+v.Queue, "IDEM_STRATEGY="+v.Strategy, "LOG_LEVEL=info"))
		if err != nil {
			return ps, err
		}
		ps = append(ps, p)
	}
	for i, p := range ps {
		if err := b.waitReady(ctx, p, ports[i]+readyOffset); err != nil {
			return ps, err
		}
	}
	return ps, nil
}

// stopWorkers stops the variant's workers, each by its pid.
func (b *bench) stopWorkers(v *variant) {
	for _, p := range v.workerProcs {
		_ = p.Stop(30 * time.Second)
	}
	v.workerProcs = nil
}

// waitReady waits up to a minute for /readyz on port to answer 200.
func (b *bench) waitReady(ctx context.Context, p *proc.Proc, port int) error {
	if err := proc.WaitHTTP(ctx, p, "http://"+addr(port)+"/readyz", time.Minute); err != nil {
		return fmt.Errorf("%w; see %s", err, b.logPath(p.Name))
	}
	return nil
}

// settled sums worker_messages_total{outcome="charged"|"declined"} over the
// variant's workers: payments they moved to a terminal status.
func (b *bench) settled(ctx context.Context, v *variant) (int, error) {
	total := 0
	for _, port := range v.Workers {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr(port)+"/metrics", nil)
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			return 0, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, err
		}
		for line := range strings.Lines(string(body)) {
			if strings.HasPrefix(line, "worker_messages_total{") &&
				(strings.Contains(line, `outcome="charged"`) || strings.Contains(line, `outcome="declined"`)) {
				var n float64
				fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &n)
				total += int(n)
			}
		}
	}
	return total, nil
}

// pending counts payments not yet settled, in both variants.
func (b *bench) pending(ctx context.Context) (int, error) {
	var n int
	err := b.cl.e2e.QueryRow(ctx, `SELECT count(*) FROM payments WHERE status = 'pending'`).Scan(&n)
	return n, err
}

// drain waits until no payment is pending, at most max; it returns how long
// it took (max if it did not get there).
func (b *bench) drain(ctx context.Context, max time.Duration) float64 {
	start := time.Now()
	for time.Since(start) < max && ctx.Err() == nil {
		if n, err := b.pending(ctx); err == nil && n == 0 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	return time.Since(start).Seconds()
}

// harnessPIDs reads the bench harness's server pids (scripts/harness writes
// them), for CPU accounting.
func (b *bench) harnessPIDs() map[string][]int {
	out := map[string][]int{}
	for _, name := range []string{"postgres", "rabbitmq", "redis"} {
		raw, _ := os.ReadFile(filepath.Join(b.cfg.HarnessDir, name, name+".pid"))
		line, _, _ := strings.Cut(string(raw), "\n")
		if pid, err := strconv.Atoi(strings.TrimSpace(line)); err == nil {
			out[name] = []int{pid}
		}
	}
	return out
}
