package main

import (
	"bufio"
	"context"
	"fmt"
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
// Redis, Postgres and RabbitMQ with the other variant.
type variant struct {
	Name     string // "on" or "off"
	Strategy string // IDEM_STRATEGY
	APIs     []string
	Workers  []string
	Exchange string
	Queue    string
	Build    string // suffix of the api's and workers' binaries: "" or "-compare"

	apiProcs, workerProcs []*proc.Proc
}

// targets is the TARGETS value for bench.js.
func (v *variant) targets() string {
	var t []string
	for _, a := range v.APIs {
		t = append(t, "http://"+a)
	}
	return strings.Join(t, ",")
}

// addr is 127.0.0.1 at port base+n.
func addr(base, n int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(base+n)) }

// newVariants returns the two copies, on ports base to base+7; the psp
// listens on base+9 (pspAddr).
func newVariants(base int) (on, off *variant) {
	on = &variant{Name: "on", Strategy: "oncepay", APIs: []string{addr(base, 0), addr(base, 2)},
		Workers: []string{addr(base, 1), addr(base, 3)}, Exchange: "payments", Queue: "payments.charge"}
	off = &variant{Name: "off", Strategy: "off", APIs: []string{addr(base, 4), addr(base, 6)},
		Workers: []string{addr(base, 5), addr(base, 7)}, Exchange: "payments_off", Queue: "payments_off.charge", Build: "-compare"}
	return on, off
}

func (b *bench) pspAddr() string { return addr(b.cfg.PortBase, 9) }

// startPSP starts the psp simulator with scripts/local's latency.
func (b *bench) startPSP(ctx context.Context) (*proc.Proc, error) {
	env := []string{"PSP_LISTEN_ADDR=" + b.pspAddr(), "PSP_OPS_ADDR=" + opsAddr(b.pspAddr()), "PSP_DATABASE_URL=" + withDB(b.cfg.AdminDB, dbPSP),
		"PSP_LATENCY=" + b.cfg.PSPLatency, "PSP_LATENCY_JITTER=25ms", "PSP_SHUTDOWN_GRACE=10s", "LOG_LEVEL=info"}
	p, err := b.start("psp", []string{b.bin("psp")}, env)
	if err != nil {
		return nil, err
	}
	return p, b.waitReady(ctx, p, opsAddr(b.pspAddr()))
}

// startAPIs starts the copy's api replicas and waits until they are ready.
func (b *bench) startAPIs(ctx context.Context, v *variant) error {
	ps, err := b.startReplicas(ctx, v, "api", v.APIs, func(name, addr string) []string {
		return []string{"API_LISTEN_ADDR=" + addr, "API_OPS_ADDR=" + opsAddr(addr), "API_MERCHANT_KEYS=" + merchantKeys,
			"API_INSTANCE=" + name, "IDEM_LEASE=10s", "SHUTDOWN_GRACE=10s"}
	}, opsAddr)
	v.apiProcs = ps
	return err
}

// startWorkers starts the copy's workers and waits until they are ready.
func (b *bench) startWorkers(ctx context.Context, v *variant) error {
	ps, err := b.startReplicas(ctx, v, "worker", v.Workers, func(name, addr string) []string {
		return []string{"WORKER_LISTEN_ADDR=" + addr, "WORKER_INSTANCE=" + name,
			"PSP_URL=http://" + b.pspAddr(), "IDEM_LEASE=15s", "WORKER_RETRY_DELAYS=1s,5s,15s", "SHUTDOWN_GRACE=20s",
			"WORKER_CONCURRENCY=" + strconv.Itoa(b.cfg.WorkerConcurrency), "WORKER_PREFETCH=" + strconv.Itoa(2*b.cfg.WorkerConcurrency)}
	}, func(addr string) string { return addr })
	v.workerProcs = ps
	return err
}

// startReplicas starts program once per address of addrs, named
// <program>-<copy>-<n>, with the copy's shared settings and env(name,
// addr), then waits until each answers /readyz at ready(addr).
func (b *bench) startReplicas(ctx context.Context, v *variant, program string, addrs []string,
	env func(name, addr string) []string, ready func(addr string) string) ([]*proc.Proc, error) {
	var ps []*proc.Proc
	for i, addr := range addrs {
		name := fmt.Sprintf("%s-%s-%d", program, v.Name, i+1)
		p, err := b.start(name, []string{b.bin(program + v.Build)}, append(env(name, addr), "REDIS_URL="+b.cfg.RedisURL,
			"DATABASE_URL="+withDB(b.cfg.AdminDB, dbE2E), "AMQP_URL="+b.cfg.AMQPURL, "AMQP_EXCHANGE="+v.Exchange,
			"AMQP_QUEUE="+v.Queue, "IDEM_STRATEGY="+v.Strategy, "LOG_LEVEL=info"))
		if err != nil {
			return ps, err
		}
		ps = append(ps, p)
	}
	for i, p := range ps {
		if err := b.waitReady(ctx, p, ready(addrs[i])); err != nil {
			return ps, err
		}
	}
	return ps, nil
}

// opsAddr is the ops listener (/livez, /readyz, /metrics) of the api or
// the psp on addr: its port + 20.
func opsAddr(addr string) string { return shift(addr, 20) }

func shift(addr string, by int) string {
	host, port, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(port)
	return net.JoinHostPort(host, strconv.Itoa(n+by))
}

// stopWorkers stops the variant's workers, each by its pid.
func (b *bench) stopWorkers(v *variant) {
	for _, p := range v.workerProcs {
		_ = p.Stop(30 * time.Second)
	}
	v.workerProcs = nil
}

// waitReady waits up to a minute for addr's /readyz to answer 200.
func (b *bench) waitReady(ctx context.Context, p *proc.Proc, addr string) error {
	if err := proc.WaitHTTP(ctx, p, "http://"+addr+"/readyz", time.Minute); err != nil {
		return fmt.Errorf("%w; see %s", err, b.logPath(p.Name))
	}
	return nil
}

// settled sums worker_messages_total{outcome="charged"|"declined"} over the
// variant's workers: payments they moved to a terminal status.
func (b *bench) settled(ctx context.Context, v *variant) (int, error) {
	total := 0
	client := &http.Client{Timeout: 5 * time.Second}
	for _, addr := range v.Workers {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "worker_messages_total{") ||
				!(strings.Contains(line, `outcome="charged"`) || strings.Contains(line, `outcome="declined"`)) {
				continue
			}
			f := strings.Fields(line)
			n, _ := strconv.ParseFloat(f[len(f)-1], 64)
			total += int(n)
		}
		resp.Body.Close()
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
		n, err := b.pending(ctx)
		if err == nil && n == 0 {
			return time.Since(start).Seconds()
		}
		time.Sleep(250 * time.Millisecond)
	}
	return time.Since(start).Seconds()
}

// harnessPIDs reads the bench harness's server pids (scripts/harness writes
// them), for CPU accounting.
func (b *bench) harnessPIDs() map[string][]int {
	out := map[string][]int{}
	dir := b.cfg.HarnessDir
	for name, file := range map[string]string{"postgres": "postgres/postgres.pid", "rabbitmq": "rabbitmq/rabbitmq.pid", "redis": "redis/redis.pid"} {
		raw, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[0])); err == nil {
			out[name] = []int{pid}
		}
	}
	return out
}
