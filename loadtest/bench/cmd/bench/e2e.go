package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	b.copies = []*variant{on, off}
	if err := b.purgeQueues(); err != nil {
		return err
	}
	if _, err := b.startPSP(ctx); err != nil {
		return err
	}
	for _, v := range b.copies {
		// The workers declare the queues and bindings; without them the api's
		// first messages would be unroutable. They stop again until the api's
		// round trips are counted, so that only the api talks to Redis then.
		if err := b.startAPIs(ctx, v); err != nil {
			return err
		}
		if err := b.startWorkers(ctx, v); err != nil {
			return err
		}
		b.stopWorkers(v)
	}
	for _, v := range b.copies { // connection pools filled, statements prepared
		if _, err := b.k6(ctx, "warmup-"+v.Name, 2*time.Minute, map[string]string{
			"TARGETS": v.targets(), "LOAD": "count", "VUS": "16", "ITERATIONS": "600", "RUN": "warm-" + v.Name}, nil); err != nil {
			return err
		}
	}
	if err := b.roundTrips(ctx, e, on, off); err != nil {
		return err
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
	for rep := range b.cfg.Repeats {
		b.phase(fmt.Sprintf("e2e: latency round %d at %d/s", rep+1, b.cfg.LatencyRate))
		var r results.LatRound
		var err error
		if r.On, r.Off, err = b.pair(ctx, fmt.Sprintf("lat%d", rep), rep, map[string]string{
			"MODE": "fresh", "LOAD": "rate", "RATE": strconv.Itoa(b.cfg.LatencyRate)}); err != nil {
			return err
		}
		if r.Floor, err = b.floor(ctx, fmt.Sprintf("lat%d", rep)); err != nil {
			return err
		}
		e.Latency = append(e.Latency, r)
		b.logf("  p50 on %.2f ms, off %.2f ms, floor %.2f ms", r.On.P50MS, r.Off.P50MS, r.Floor.P50MS)
	}

	err := b.sustainSearch(ctx, e, on, off)
	e.VacuumSeconds, e.RewriteSeconds = b.vacuumed.Seconds(), b.rewritten.Seconds()
	b.logf("  vacuum between phases took %s in all, AOF rewrites %s", b.vacuumed.Round(time.Second), b.rewritten.Round(time.Second))
	return err
}

// pair runs one apiPhase with env for each copy, the boundary's first in
// even rounds and last in odd ones; each phase is named <run>-<copy>.
func (b *bench) pair(ctx context.Context, run string, rep int, env map[string]string) (on, off results.Phase, err error) {
	for i := range b.copies {
		v := b.copies[(i+rep)%2]
		p, err := b.apiPhase(ctx, run+"-"+v.Name, v, maps.Clone(env))
		if err != nil {
			return on, off, err
		}
		if v == b.copies[0] {
			on = p
		} else {
			off = p
		}
	}
	return on, off, nil
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

// measure runs k6 with env against v for d (every phase of the e2e
// benchmark, sustained runs included) and measures it: throughput,
// latency, what v's workers settled meanwhile, CPU per process group of
// both copies, the AOF rewrites that overlapped it. every, if set, is
// called once a second while k6 runs.
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
	p.Failed, p.Dropped, p.P50MS, p.P99MS = s.Failed, s.Dropped, s.P50MS, s.P99MS
	p.AOFRewrites = b.aofRewritesSince(ctx, run, redis0, redisOK)
	if s.Failed > 0 {
		b.note("%s: %d requests failed %v", run, s.Failed, s.FailedBy)
	}
	return p, s, nil
}

// e2eRoots are the process trees whose CPU an e2e phase reports.
func (b *bench) e2eRoots() map[string][]int {
	roots := b.harnessPIDs()
	for _, v := range b.copies {
		for _, p := range v.apiProcs {
			roots["api"] = append(roots["api"], p.PID)
		}
		for _, p := range v.workerProcs {
			roots["worker"] = append(roots["worker"], p.PID)
		}
	}
	for _, p := range b.procs.Named("psp") {
		roots["psp"] = append(roots["psp"], p.PID)
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
	CPU      float64        `json:"-"` // seconds of CPU k6 used
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
	argv = append(argv, filepath.Join(b.cfg.Repo, "loadtest", "bench", "k6", "bench.js"))
	var (
		r   proc.Result
		err error
	)
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
	if err != nil {
		return s, fmt.Errorf("k6 %s wrote no summary: %w", name, err)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, fmt.Errorf("k6 %s summary: %w", name, err)
	}
	s.CPU = r.CPU.Seconds()
	return s, nil
}
