package main

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

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
	both := []*variant{on, off}
	if err := b.purgeQueues(on, off); err != nil {
		return err
	}
	if _, err := b.startPSP(ctx); err != nil {
		return err
	}
	for _, v := range both {
		if err := b.startAPIs(ctx, v); err != nil {
			return err
		}
		// The workers declare the queues and bindings; without them the api's
		// first messages would be unroutable. They stop again until the api's
		// round trips are counted, so that only the api talks to Redis then.
		if err := b.startWorkers(ctx, v); err != nil {
			return err
		}
		b.stopWorkers(v)
	}
	for _, v := range both {
		// Connection pools (Redis, Postgres) filled for 16 concurrent clients,
		// prepared statements, first publishes.
		if _, err := b.k6(ctx, "warmup-"+v.Name, 2*time.Minute, map[string]string{
			"TARGETS": v.targets(), "LOAD": "count", "VUS": "16", "ITERATIONS": "600", "RUN": "warm-" + v.Name,
		}); err != nil {
			return err
		}
	}
	if err := b.roundTrips(ctx, e, on, off); err != nil {
		return err
	}

	sat := map[string]string{"MODE": "fresh", "LOAD": "vus", "VUS": strconv.Itoa(b.cfg.SaturationVUs)}
	lat := map[string]string{"MODE": "fresh", "LOAD": "rate", "RATE": strconv.Itoa(b.cfg.LatencyRate)}
	for rep := range b.cfg.Repeats {
		b.phase(fmt.Sprintf("e2e: saturation round %d", rep+1))
		var round results.SatRound
		if err := b.pair(ctx, fmt.Sprintf("sat%d", rep), rep, on, off, sat, &round.On, &round.Off); err != nil {
			return err
		}
		p, err := b.apiPhase(ctx, fmt.Sprintf("sat%d-replay", rep), on, both, map[string]string{
			"MODE": "replay", "LOAD": "vus", "VUS": strconv.Itoa(b.cfg.SaturationVUs), "KEYS_FROM": round.On.Name, "KEYS": "1000"})
		if err != nil {
			return err
		}
		round.Replay = p
		e.Saturation = append(e.Saturation, round)
		b.logf("  round %d: on %.0f/s (p50 %.1f ms), off %.0f/s (p50 %.1f ms), replay %.0f/s (p50 %.1f ms); charged on %.0f/s, off %.0f/s",
			rep+1, round.On.Accepted, round.On.P50MS, round.Off.Accepted, round.Off.P50MS, round.Replay.Replayed, round.Replay.P50MS,
			round.On.Charged, round.Off.Charged)
	}
	for rep := range b.cfg.Repeats {
		b.phase(fmt.Sprintf("e2e: latency round %d at %d/s", rep+1, b.cfg.LatencyRate))
		var round results.LatRound
		if err := b.pair(ctx, fmt.Sprintf("lat%d", rep), rep, on, off, lat, &round.On, &round.Off); err != nil {
			return err
		}
		f, err := b.floor(ctx, fmt.Sprintf("lat%d", rep))
		if err != nil {
			return err
		}
		round.Floor = f
		e.Latency = append(e.Latency, round)
		b.logf("  round %d: p50 on %.2f ms, off %.2f ms; p99 on %.2f ms, off %.2f ms; pkg/idem floor p50 %.2f ms, p99 %.2f ms",
			rep+1, round.On.P50MS, round.Off.P50MS, round.On.P99MS, round.Off.P99MS, f.P50MS, f.P99MS)
	}

	err := b.sustainSearch(ctx, e, on, off)
	e.VacuumSeconds, e.RewriteSeconds = b.vacuumed.Seconds(), b.rewritten.Seconds()
	b.logf("  vacuum between phases took %s in all, AOF rewrites %s", b.vacuumed.Round(time.Second), b.rewritten.Round(time.Second))
	return err
}

// pair runs one apiPhase with env for each copy, the boundary's first in
// even rounds and last in odd ones, into *onP and *offP; each phase is
// named <run>-<copy>.
func (b *bench) pair(ctx context.Context, run string, rep int, on, off *variant, env map[string]string, onP, offP *results.Phase) error {
	order := []*variant{on, off}
	if rep%2 == 1 {
		order = []*variant{off, on}
	}
	for _, v := range order {
		p, err := b.apiPhase(ctx, run+"-"+v.Name, v, []*variant{on, off}, maps.Clone(env))
		if err != nil {
			return err
		}
		if v == on {
			*onP = p
		} else {
			*offP = p
		}
	}
	return nil
}

// purgeQueues empties the variants' charge queues, if they exist from an
// earlier run, so that no old backlog competes with this one.
func (b *bench) purgeQueues(vs ...*variant) error {
	conn, err := amqp.Dial(b.cfg.AMQPURL)
	if err != nil {
		return fmt.Errorf("rabbitmq: %w", err)
	}
	defer conn.Close()
	for _, v := range vs {
		ch, err := conn.Channel()
		if err != nil {
			return err
		}
		if _, err := ch.QueuePurge(v.Queue, false); err != nil { // a missing queue closes the channel; fine
			continue
		}
		ch.Close()
	}
	return nil
}

// roundTrips counts Redis commands per request, each phase after CONFIG
// RESETSTAT, while no worker runs (so that only the api talks to Redis);
// then starts the workers and counts the commands per charged payment.
func (b *bench) roundTrips(ctx context.Context, e *results.E2E, on, off *variant) error {
	b.phase("e2e: redis round trips")
	n := 2000
	if b.cfg.Quick {
		n = 500
	}
	count := func(name string, v *variant, env map[string]string, replay bool) (results.Commands, error) {
		if err := b.resetStats(ctx); err != nil {
			return results.Commands{}, err
		}
		env["TARGETS"], env["LOAD"], env["VUS"], env["ITERATIONS"], env["RUN"] = v.targets(), "count", "8", strconv.Itoa(n), name
		s, err := b.k6(ctx, name, 3*time.Minute, env)
		if err != nil {
			return results.Commands{}, err
		}
		if s.Failed > 0 {
			b.note("%s: %d requests failed %v", name, s.Failed, s.FailedBy)
		}
		reqs := s.Accepted
		if replay {
			reqs = s.Replayed
		}
		return b.commands(ctx, reqs)
	}
	var err error
	if e.RoundTrips.Fresh, err = count("rt-fresh", on, map[string]string{"MODE": "fresh"}, false); err != nil {
		return err
	}
	if e.RoundTrips.Replay, err = count("rt-replay", on, map[string]string{"MODE": "replay", "KEYS_FROM": "rt-fresh", "KEYS": strconv.Itoa(n)}, true); err != nil {
		return err
	}
	if e.RoundTrips.Off, err = count("rt-off", off, map[string]string{"MODE": "fresh"}, false); err != nil {
		return err
	}
	e.OffHonoured = e.RoundTrips.Off.Requests > 0 && e.RoundTrips.Off.Total == 0
	if !e.OffHonoured {
		b.note("the api with IDEM_STRATEGY=off made %d Redis calls for %d requests: the strategy is not honoured (has IDEM_STRATEGY landed?); on/off ratios are not measured",
			e.RoundTrips.Off.Total, e.RoundTrips.Off.Requests)
	}
	b.logf("  per new request %.3f (%v), per replay %.3f (%v), off %.3f",
		e.RoundTrips.Fresh.PerRequest(), e.RoundTrips.Fresh.ByCommand,
		e.RoundTrips.Replay.PerRequest(), e.RoundTrips.Replay.ByCommand, e.RoundTrips.Off.PerRequest())

	// Both copies' workers charge the backlog on a reset counter: the
	// copy without the boundary makes no Redis call.
	if err := b.resetStats(ctx); err != nil {
		return err
	}
	for _, v := range []*variant{on, off} {
		if err := b.startWorkers(ctx, v); err != nil {
			return err
		}
	}
	b.drain(ctx, 2*time.Minute)
	settled, err := b.settled(ctx, on)
	if err != nil {
		return err
	}
	if e.RoundTrips.Charge, err = b.commands(ctx, settled); err != nil {
		return err
	}
	b.logf("  per charged payment (worker) %.3f (%v)", e.RoundTrips.Charge.PerRequest(), e.RoundTrips.Charge.ByCommand)
	return nil
}

// apiPhase runs one k6 phase of Phase seconds against v, vacuumed and
// with Redis's AOF rewritten first (see vacuum and rewriteAOF), measures it
// and waits for the backlog to drain.
func (b *bench) apiPhase(ctx context.Context, run string, v *variant, all []*variant, env map[string]string) (results.Phase, error) {
	b.vacuum(ctx)
	b.rewriteAOF(ctx)
	p, _, err := b.measure(ctx, run, v, all, env, time.Duration(b.cfg.PhaseSeconds)*time.Second, nil)
	if err == nil {
		p.DrainedIn = b.drain(ctx, 2*time.Minute)
	}
	return p, err
}

// measure runs k6 with env against v for d (every phase of the e2e
// benchmark, sustained runs included) and measures it: throughput,
// latency, what v's workers settled meanwhile, CPU per process group of
// all, the AOF rewrites that overlapped it. every, if set, is called once a
// second while k6 runs.
func (b *bench) measure(ctx context.Context, run string, v *variant, all []*variant, env map[string]string, d time.Duration,
	every func()) (results.Phase, k6Summary, error) {
	secs := d.Seconds()
	env["TARGETS"], env["RUN"], env["DURATION"] = v.targets(), run, strconv.Itoa(int(secs))+"s"
	settled0, err := b.settled(ctx, v)
	if err != nil {
		return results.Phase{}, k6Summary{}, err
	}
	redis0, redisOK := b.redisNow(ctx)
	span := cpu.Start(b.e2eRoots(all))
	p := results.Phase{Name: run}
	t0 := time.Now()
	wait := b.k6Async(ctx, run, d+3*time.Minute, env)
	stop, ticked := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ticked)
		if every == nil {
			return
		}
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				every()
			}
		}
	}()
	s, err := wait()
	close(stop)
	<-ticked
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
func (b *bench) e2eRoots(all []*variant) map[string][]int {
	roots := b.harnessPIDs()
	for _, v := range all {
		roots["api"] = append(roots["api"], pids(v.apiProcs)...)
		roots["worker"] = append(roots["worker"], pids(v.workerProcs)...)
	}
	for _, p := range b.procs.Named("psp") {
		roots["psp"] = append(roots["psp"], p.PID)
	}
	return roots
}
