package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oncepay/oncepay/internal/proc"
	"github.com/oncepay/oncepay/loadtest/bench/cpu"
	"github.com/oncepay/oncepay/loadtest/bench/results"
	amqp "github.com/rabbitmq/amqp091-go"
)

// e2e runs the end-to-end benchmark on the bench runtime: the psp, and two
// copies of the pipeline (each two api replicas and two workers), with the
// boundary on (IDEM_STRATEGY=oncepay) and off (IDEM_STRATEGY=off). Each
// round runs both copies' phases side by side, in alternating order.
func (b *bench) e2e(ctx context.Context) error {
	b.phase("e2e: start the runtime")
	e := &results.E2E{}
	b.res.E2E = e
	on, off := newVariants(b.cfg.PortBase)
	if b.patroni != nil {
		off = patroniVariant(b.cfg.PortBase, b.patroni.url)
	}
	b.copies = []*variant{on, off}
	if err := b.purgeQueues(); err != nil {
		return err
	}
	if _, err := b.startPSP(ctx); err != nil {
		return err
	}
	for _, v := range b.copies {
		// The workers declare the queues and bindings the api publishes to,
		// then stop until the api's round trips are counted. The warm-up
		// fills connection pools and prepares statements.
		if err := b.startAPIs(ctx, v); err != nil {
			return err
		}
		if err := b.startWorkers(ctx, v); err != nil {
			return err
		}
		b.stopWorkers(v)
		if _, err := b.k6(ctx, "warmup-"+v.Name, 2*time.Minute, map[string]string{
			"TARGETS": v.targets(), "LOAD": "count", "VUS": "16", "ITERATIONS": "600", "RUN": "warm-" + v.Name}, nil); err != nil {
			return err
		}
	}
	if err := b.roundTrips(ctx, e, on, off); err != nil {
		return err
	}

	// The latency rounds come first, on a quiet machine: after the warm-up
	// and before the saturation phases leave load, autovacuum and AOF
	// rewrites behind them.
	for rep := range b.cfg.Repeats {
		b.phase(fmt.Sprintf("e2e: latency round %d at %d/s", rep+1, b.cfg.LatencyRate))
		r, err := b.latencyRound(ctx, rep)
		if err != nil {
			return err
		}
		e.Latency = append(e.Latency, r)
		b.logf("  p50 on %.2f ms, off %.2f ms, paired overhead %+.2f ms, floor %.2f ms",
			r.On.P50MS, r.Off.P50MS, results.Median(r.Overheads()), r.Floor.P50MS)
	}

	vus := strconv.Itoa(b.cfg.SaturationVUs)
	for rep := range b.cfg.Repeats {
		b.phase(fmt.Sprintf("e2e: saturation round %d", rep+1))
		var r results.SatRound
		var err error
		if r.On, r.Off, err = b.pair(ctx, fmt.Sprintf("sat%d", rep), rep, map[string]string{"MODE": "fresh", "LOAD": "vus", "VUS": vus}); err != nil {
			return err
		}
		if r.Replay, err = b.apiPhase(ctx, fmt.Sprintf("sat%d-replay", rep), on, map[string]string{
			"MODE": "replay", "LOAD": "vus", "VUS": vus, "KEYS_FROM": r.On.Name, "KEYS": "1000"}); err != nil {
			return err
		}
		e.Saturation = append(e.Saturation, r)
		b.logf("  on %.0f/s, off %.0f/s, replay %.0f/s", r.On.Accepted, r.Off.Accepted, r.Replay.Replayed)
	}
	err := b.sustainSearch(ctx, e)
	e.VacuumSeconds, e.RewriteSeconds = b.vacuumed.Seconds(), b.rewritten.Seconds()
	b.logf("  vacuum between phases took %s in all, AOF rewrites %s", b.vacuumed.Round(time.Second), b.rewritten.Round(time.Second))
	return err
}

// pair runs one apiPhase with env for each copy, the boundary's first in
// even rounds and last in odd ones; each phase is named <run>-<copy>.
func (b *bench) pair(ctx context.Context, run string, rep int, env map[string]string) (on, off results.Phase, err error) {
	var ps [2]results.Phase
	for i := range b.copies {
		c := (i + rep) % 2
		if ps[c], err = b.apiPhase(ctx, run+"-"+b.copies[c].Name, b.copies[c], maps.Clone(env)); err != nil {
			break
		}
	}
	return ps[0], ps[1], err
}

// latencyRound runs round rep at LatencyRate once the machine has settled:
// LatencyPairs pairs of LatencySlice-second slices, one per copy, back to
// back, the copy that goes first alternating by pair, so that both copies
// see the same background noise; then the floor. Around each slice it
// reads the copy's api histograms, for the round's Breakdown, which ends
// with the floor's calls paced as one replica's requests (pacedFloor).
// With BENCH_PPROF=1 the first pair's slices are traced (traceAPI).
func (b *bench) latencyRound(ctx context.Context, rep int) (results.LatRound, error) {
	var r results.LatRound
	b.settle(ctx)
	slice := time.Duration(b.cfg.LatencySlice) * time.Second
	var ons, offs []results.Phase
	during := [2]map[string]results.Hist{{}, {}} // by copy: what its slices observed
	histsOK := true
	for i := range b.cfg.LatencyPairs {
		var ps [2]results.Phase
		for j := range b.copies {
			c := (j + i + rep) % 2
			run := fmt.Sprintf("lat%d-%d-%s", rep, i, b.copies[c].Name)
			h0, err0 := b.apiHists(ctx, b.copies[c])
			traced, traceErr := make(chan struct{}), error(nil)
			if b.cfg.Pprof && i == 0 {
				go func() { defer close(traced); traceErr = b.traceAPI(ctx, b.copies[c], run, slice) }()
			} else {
				close(traced)
			}
			p, _, err := b.measure(ctx, run, b.copies[c], map[string]string{
				"MODE": "fresh", "LOAD": "rate", "RATE": strconv.Itoa(b.cfg.LatencyRate)}, slice, nil)
			if <-traced; traceErr != nil {
				b.note("%s: execution trace: %v", run, traceErr)
			}
			if err != nil {
				return r, err
			}
			h1, err1 := b.apiHists(ctx, b.copies[c])
			if err := cmp.Or(err0, err1); err != nil {
				if histsOK {
					b.note("latency round %d: the api's histograms: %v; no breakdown", rep+1, err)
				}
				histsOK = false
			}
			for k, h := range h1 {
				during[c][k] = during[c][k].Add(h.Sub(h0[k]))
			}
			p.DrainedIn = b.drain(ctx, 10*time.Second)
			ps[c] = p
		}
		ons, offs = append(ons, ps[0]), append(offs, ps[1])
		r.Pairs = append(r.Pairs, results.LatPair{OnP50MS: ps[0].P50MS, OffP50MS: ps[1].P50MS})
	}
	r.On, r.Off = medianPhase(ons), medianPhase(offs)
	var err error
	var fb, fc results.Timing
	r.Floor, fb, fc, err = b.floor(ctx, fmt.Sprintf("lat%d", rep))
	if err != nil || !histsOK {
		return r, err
	}
	on, off := during[0], during[1]
	bd := &results.Breakdown{Begin: on[histBegin].Timing(), Complete: on[histComplete].Timing(),
		FloorBegin: fb, FloorComplete: fc, ServerOn: on[histPayments].Timing(), ServerOff: off[histPayments].Timing()}
	bd.PacedBegin, bd.PacedComplete, err = b.pacedFloor(ctx, fmt.Sprintf("lat%d", rep), b.cfg.FloorOps/4)
	r.Breakdown = bd
	return r, err
}

// traceAPI saves a Go execution trace of v's first api replica (its pprof
// listener, BENCH_PPROF=1) over most of a slice of length d, as
// <Out>/pprof/<run>.trace, for go tool trace.
func (b *bench) traceAPI(ctx context.Context, v *variant, run string, d time.Duration) error {
	url := fmt.Sprintf("http://%s/debug/pprof/trace?seconds=%d", addr(v.APIs[0]+40), max(int(d.Seconds())-1, 1))
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := (&http.Client{Timeout: d + 10*time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	dir := filepath.Join(b.cfg.Out, "pprof")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, run+".trace"))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// medianPhase returns the phase of ps whose p50 is the median.
func medianPhase(ps []results.Phase) results.Phase {
	s := slices.Clone(ps)
	slices.SortFunc(s, func(a, b results.Phase) int { return cmp.Compare(a.P50MS, b.P50MS) })
	return s[len(s)/2]
}

// settle vacuums the tables, rewrites the AOF, then waits, at most 30 s
// (20 s quick), until the 1-minute load average is below the number
// of cores and no autovacuum worker runs, so that the latency slices do not
// start amid work left over from the phases before them.
func (b *bench) settle(ctx context.Context) {
	b.vacuum(ctx)
	b.rewriteAOF(ctx)
	limit := map[bool]time.Duration{false: 30 * time.Second, true: 20 * time.Second}[b.cfg.Quick]
	start := time.Now()
	load, vacuums := 0.0, 0
	for ctx.Err() == nil {
		load = cpu.LoadAvg()[0]
		vacuums = 0
		_ = b.cl.e2e.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'`).Scan(&vacuums)
		if load < float64(runtime.NumCPU()) && vacuums == 0 {
			b.logf("  settled in %s (load %.2f)", time.Since(start).Round(time.Second), load)
			return
		}
		if time.Since(start) > limit {
			break
		}
		time.Sleep(time.Second)
	}
	b.note("latency round: not settled after %s (load %.2f, %d autovacuum workers); the round runs anyway", limit, load, vacuums)
}

// purgeQueues empties the copies' charge queues, if they exist from an
// earlier run, so that no old backlog competes with this one.
func (b *bench) purgeQueues() error {
	conn, err := amqp.Dial(b.cfg.AMQPURL)
	if err != nil {
		return fmt.Errorf("rabbitmq: %w", err)
	}
	defer conn.Close()
	for _, v := range b.copies {
		ch, err := conn.Channel()
		if err != nil {
			return err
		}
		if _, err := ch.QueuePurge(v.Queue, false); err == nil { // a missing queue closes the channel; fine
			ch.Close()
		}
	}
	return nil
}

// apiPhase runs one k6 phase of PhaseSeconds against v, vacuumed and with
// Redis's AOF rewritten first (see vacuum and rewriteAOF), measures it and
// waits for the backlog to drain.
func (b *bench) apiPhase(ctx context.Context, run string, v *variant, env map[string]string) (results.Phase, error) {
	b.vacuum(ctx)
	b.rewriteAOF(ctx)
	p, _, err := b.measure(ctx, run, v, env, time.Duration(b.cfg.PhaseSeconds)*time.Second, nil)
	if err == nil {
		p.DrainedIn = b.drain(ctx, 2*time.Minute)
	}
	return p, err
}

// measure runs k6 with env against v for d and measures throughput,
// latency, what v's workers settled, CPU per process group and the AOF
// rewrites that overlapped it. every, if set, runs once a second.
func (b *bench) measure(ctx context.Context, run string, v *variant, env map[string]string, d time.Duration,
	every func()) (results.Phase, k6Summary, error) {
	secs := d.Seconds()
	env["TARGETS"], env["RUN"], env["DURATION"] = v.targets(), run, strconv.Itoa(int(secs))+"s"
	p := results.Phase{Name: run}
	settled0, err := b.settled(ctx, v)
	if err != nil {
		return p, k6Summary{}, err
	}
	redis0, redisOK := b.redisNow(ctx)
	span, t0 := cpu.Start(b.e2eRoots()), time.Now()
	s, err := b.k6(ctx, run, d+3*time.Minute, env, every)
	if err != nil {
		return p, s, err
	}
	p.CPU = span.Stop(time.Since(t0).Seconds(), map[string]float64{"k6": s.CPU})
	settled1, err := b.settled(ctx, v)
	if err != nil {
		return p, s, err
	}
	p.Accepted, p.Replayed, p.Charged = float64(s.Accepted)/secs, float64(s.Replayed)/secs, float64(settled1-settled0)/secs
	p.Failed, p.P50MS, p.P99MS = s.Failed, s.P50MS, s.P99MS
	p.AOFRewrites = b.aofRewritesSince(ctx, run, redis0, redisOK)
	if s.Failed > 0 {
		b.note("%s: %d requests failed %v", run, s.Failed, s.FailedBy)
	}
	return p, s, nil
}

// e2eRoots are the process trees whose CPU an e2e phase reports.
func (b *bench) e2eRoots() map[string][]int {
	roots := b.harnessPIDs()
	if b.patroni != nil {
		roots["postgres"] = append(roots["postgres"], b.patroni.pids()...)
	}
	for _, v := range b.copies {
		for group, ps := range map[string][]*proc.Proc{"api": v.apiProcs, "worker": v.workerProcs, "psp": b.procs.Named("psp")} {
			for _, p := range ps {
				roots[group] = append(roots[group], p.PID)
			}
		}
	}
	return roots
}

// k6Summary is what loadtest/bench/k6/bench.js writes at the end.
type k6Summary struct {
	Accepted int            `json:"accepted"`
	Replayed int            `json:"replayed"`
	Failed   int            `json:"failed"`
	FailedBy map[string]int `json:"failed_by"` // 0 (transport), 409, 4xx, 503, 5xx
	Dropped  int            `json:"dropped"`
	P50MS    float64        `json:"lat_p50_ms"`
	P99MS    float64        `json:"lat_p99_ms"`
	// Refused are the 503s and 429s, RefusedP99MS their latency's p99,
	// RefusedBare how many of them had no Retry-After.
	Refused      int     `json:"refused"`
	RefusedP99MS float64 `json:"refused_p99_ms"`
	RefusedBare  int     `json:"refused_no_retry_after"`
	CPU          float64 `json:"-"` // seconds of CPU k6 used
}

// k6 runs bench.js with env (TARGETS, MODE, LOAD, RATE, VUS, DURATION,
// ITERATIONS, KEYS, RUN) and returns its summary; every, if set, is called
// once a second while k6 runs.
func (b *bench) k6(ctx context.Context, name string, timeout time.Duration, env map[string]string, every func()) (k6Summary, error) {
	dir := filepath.Join(b.cfg.Out, "k6")
	_ = os.MkdirAll(dir, 0o755)
	summary := filepath.Join(dir, name+".json")
	_ = os.Remove(summary)
	argv := []string{b.cfg.K6, "run", "--quiet", "--no-usage-report", "--address", "", "-e", "SUMMARY=" + summary}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		argv = append(argv, "-e", k+"="+env[k])
	}
	argv = b.onLoadCPUs(append(argv, filepath.Join(b.cfg.Repo, "loadtest", "bench", "k6", "bench.js")))
	var r proc.Result
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		r, err = b.command(ctx, "k6-"+name, timeout, dir, nil, argv...)
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-tick.C:
			if every != nil {
				every()
			}
		}
	}
	var s k6Summary
	if err != nil {
		return s, err
	}
	raw, err := os.ReadFile(summary)
	if err == nil {
		err = json.Unmarshal(raw, &s)
	}
	if err != nil {
		return s, fmt.Errorf("k6 %s summary: %w", name, err)
	}
	s.CPU = r.CPU.Seconds()
	return s, nil
}

// merchantKeys are the demo keys of scripts/local; bench.js uses merchant_a.
const merchantKeys = "merchant_a=sk_test_merchant_a_0123456789,merchant_b=sk_test_merchant_b_0123456789"

// variant is one copy of the pipeline: two api replicas and two workers
// with one IDEM_STRATEGY, on their own exchange and queue, sharing the psp,
// Redis, Postgres and RabbitMQ with the other copy. Each service listens on
// 127.0.0.1 at its port, its ops listener (/readyz, /metrics) 20 higher.
type variant struct {
	Name, Strategy        string // "on", "off" or "patroni"; IDEM_STRATEGY
	DatabaseURL           string // its Postgres; empty: the harness's, database dbE2E
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

// patroniVariant is the copy that takes the place of off with BENCH_PG=patroni:
// the boundary on, the production build, on its own exchange and queue,
// Postgres under Patroni at url.
func patroniVariant(base int, url string) *variant {
	return &variant{Name: "patroni", Strategy: "oncepay", APIs: []int{base + 4, base + 6}, Workers: []int{base + 5, base + 7},
		Exchange: "payments_patroni", Queue: "payments_patroni.charge", DatabaseURL: url}
}

// startPSP starts the psp simulator with scripts/local's latency.
func (b *bench) startPSP(ctx context.Context) (*proc.Proc, error) {
	port := b.cfg.PortBase + 9
	p, err := b.start("psp", b.onLoadCPUs([]string{b.bin("psp")}), []string{"PSP_LISTEN_ADDR=" + addr(port), "PSP_OPS_ADDR=" + addr(port+20),
		"PSP_DATABASE_URL=" + withDB(b.cfg.AdminDB, dbPSP), "PSP_LATENCY=" + b.cfg.PSPLatency, "PSP_LATENCY_JITTER=25ms",
		"PSP_SHUTDOWN_GRACE=10s", "LOG_LEVEL=info"})
	if err != nil {
		return nil, err
	}
	return p, b.waitReady(ctx, p, port+20)
}

// onLoadCPUs returns argv to run on the load's CPUs (BENCH_LOAD_CPUS) with
// taskset, or argv itself when the load shares every CPU.
func (b *bench) onLoadCPUs(argv []string) []string {
	if b.cfg.LoadCPUs == "" {
		return argv
	}
	return append([]string{"taskset", "--cpu-list", b.cfg.LoadCPUs}, argv...)
}

// startAPIs starts the copy's api replicas and waits until they are ready.
func (b *bench) startAPIs(ctx context.Context, v *variant) (err error) {
	v.apiProcs, err = b.startReplicas(ctx, v, "api", v.APIs, 20, func(name string, port int) []string {
		return []string{"API_LISTEN_ADDR=" + addr(port), "API_OPS_ADDR=" + addr(port+20), "API_MERCHANT_KEYS=" + merchantKeys,
			"API_INSTANCE=" + name, "IDEM_LEASE=10s", "SHUTDOWN_GRACE=10s", b.pprofEnv("API", port)}
	})
	return err
}

// startWorkers starts the copy's workers and waits until they are ready.
func (b *bench) startWorkers(ctx context.Context, v *variant) (err error) {
	v.workerProcs, err = b.startReplicas(ctx, v, "worker", v.Workers, 0, func(name string, port int) []string {
		return []string{"WORKER_LISTEN_ADDR=" + addr(port), "WORKER_INSTANCE=" + name, "PSP_URL=http://" + addr(b.cfg.PortBase+9),
			"IDEM_LEASE=15s", "WORKER_RETRY_DELAYS=1s,5s,15s", "SHUTDOWN_GRACE=20s",
			"WORKER_CONCURRENCY=" + strconv.Itoa(b.cfg.WorkerConcurrency), "WORKER_PREFETCH=" + strconv.Itoa(2*b.cfg.WorkerConcurrency), b.pprofEnv("WORKER", port)}
	})
	return err
}

// pprofEnv is the <prefix>_PPROF_ADDR setting of a service on port: its
// port + 40 with BENCH_PPROF=1, else empty (no pprof listener).
func (b *bench) pprofEnv(prefix string, port int) string {
	if !b.cfg.Pprof {
		return prefix + "_PPROF_ADDR="
	}
	return prefix + "_PPROF_ADDR=" + addr(port+40)
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
			"DATABASE_URL="+cmp.Or(v.DatabaseURL, withDB(b.cfg.AdminDB, dbE2E)), "AMQP_URL="+b.cfg.AMQPURL, "AMQP_EXCHANGE="+v.Exchange,
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

// pending counts payments not yet settled, in both variants (with
// BENCH_PG=patroni, in both systems of record).
func (b *bench) pending(ctx context.Context) (int, error) {
	var n int
	err := b.cl.e2e.QueryRow(ctx, `SELECT count(*) FROM payments WHERE status = 'pending'`).Scan(&n)
	if err == nil && b.patroni != nil {
		var m int
		err = b.patroni.pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE status = 'pending'`).Scan(&m)
		n += m
	}
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
