package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/cpu"
	"github.com/oncepay/oncepay/loadtest/bench/results"
	amqp "github.com/rabbitmq/amqp091-go"
)

// e2e runs the end-to-end benchmark on the bench runtime: the psp, and two
// variants of the pipeline (each two api replicas and two workers), with
// the boundary on (IDEM_STRATEGY=oncepay) and off (IDEM_STRATEGY=off).
func (b *bench) e2e(ctx context.Context) error {
	b.phase("e2e: start the runtime")
	e := &results.E2E{}
	b.res.E2E = e
	on, off := newVariants()
	if b.cfg.BaselineAPI != "" { // A/B run: "off" is the baseline api, boundary on
		off.Strategy, off.APIBin = "oncepay", b.cfg.BaselineAPI
		e.Baseline = b.cfg.BaselineAPI
	}
	if err := b.purgeQueues(on, off); err != nil {
		return err
	}
	if _, err := b.startPSP(ctx); err != nil {
		return err
	}
	for _, v := range []*variant{on, off} {
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
	for _, v := range []*variant{on, off} {
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

	for rep := range b.cfg.Repeats {
		b.phase(fmt.Sprintf("e2e: saturation round %d", rep+1))
		var round results.SatRound
		order := []*variant{on, off}
		if rep%2 == 1 {
			order = []*variant{off, on}
		}
		freshRun := ""
		for _, v := range order {
			run := fmt.Sprintf("sat%d-%s", rep, v.Name)
			p, err := b.apiPhase(ctx, run, v, []*variant{on, off}, map[string]string{
				"MODE": "fresh", "LOAD": "vus", "VUS": strconv.Itoa(b.cfg.SatVUs)})
			if err != nil {
				return err
			}
			if v == on {
				round.On, freshRun = p, run
			} else {
				round.Off = p
			}
		}
		p, err := b.apiPhase(ctx, fmt.Sprintf("sat%d-replay", rep), on, []*variant{on, off}, map[string]string{
			"MODE": "replay", "LOAD": "vus", "VUS": strconv.Itoa(b.cfg.SatVUs), "KEYS_FROM": freshRun, "KEYS": "1000"})
		if err != nil {
			return err
		}
		round.Replay = p
		b.logf("  round %d: on %.0f/s (p50 %.1f ms), off %.0f/s (p50 %.1f ms), replay %.0f/s (p50 %.1f ms); charged on %.0f/s, off %.0f/s",
			rep+1, round.On.Accepted, round.On.P50MS, round.Off.Accepted, round.Off.P50MS, round.Replay.Replayed, round.Replay.P50MS,
			round.On.Charged, round.Off.Charged)
		for _, v := range order {
			a, err := b.alone(ctx, fmt.Sprintf("alone%d-%s", rep, v.Name), v, []*variant{on, off})
			if err != nil {
				return err
			}
			if v == on {
				round.OnAlone = &a
			} else {
				round.OffAlone = &a
			}
		}
		b.logf("  round %d, one stage at a time: api on %.0f/s, off %.0f/s; workers on %.0f/s, off %.0f/s",
			rep+1, round.OnAlone.API.Accepted, round.OffAlone.API.Accepted, round.OnAlone.Drain.Charged, round.OffAlone.Drain.Charged)
		e.Saturation = append(e.Saturation, round)
	}

	for rep := range b.cfg.Repeats {
		b.phase(fmt.Sprintf("e2e: latency round %d at %d/s", rep+1, b.cfg.LatencyRate))
		var round results.LatRound
		order := []*variant{on, off}
		if rep%2 == 1 {
			order = []*variant{off, on}
		}
		for _, v := range order {
			p, err := b.apiPhase(ctx, fmt.Sprintf("lat%d-%s", rep, v.Name), v, []*variant{on, off}, map[string]string{
				"MODE": "fresh", "LOAD": "rate", "RATE": strconv.Itoa(b.cfg.LatencyRate)})
			if err != nil {
				return err
			}
			if v == on {
				round.On = p
			} else {
				round.Off = p
			}
		}
		e.Latency = append(e.Latency, round)
		b.logf("  round %d: p50 on %.2f ms, off %.2f ms; p99 on %.2f ms, off %.2f ms",
			rep+1, round.On.P50MS, round.Off.P50MS, round.On.P99MS, round.Off.P99MS)
	}

	err := b.sustainSearch(ctx, e, on, off)
	e.VacuumSeconds, e.RewriteSeconds = b.vacuumed.Seconds(), b.rewritten.Seconds()
	b.logf("  vacuum between phases took %s in all, AOF rewrites %s", b.vacuumed.Round(time.Second), b.rewritten.Round(time.Second))
	return err
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
	if !e.OffHonoured && e.Baseline == "" {
		b.note("the api with IDEM_STRATEGY=off made %d Redis calls for %d requests: the strategy is not honoured (has IDEM_STRATEGY landed?); on/off ratios are not measured",
			e.RoundTrips.Off.Total, e.RoundTrips.Off.Requests)
	}
	b.logf("  per new request %.3f (%v), per replay %.3f (%v), off %.3f",
		e.RoundTrips.Fresh.PerRequest(), e.RoundTrips.Fresh.ByCommand,
		e.RoundTrips.Replay.PerRequest(), e.RoundTrips.Replay.ByCommand, e.RoundTrips.Off.PerRequest())

	// The off workers drain their backlog first; then the on workers start
	// on a reset counter, and charge the on backlog alone.
	if err := b.startWorkers(ctx, off); err != nil {
		return err
	}
	if err := b.waitSettled(ctx, off, b.payments(ctx, "warm-off-", "rt-off-"), 2*time.Minute); err != nil {
		return err
	}
	if err := b.resetStats(ctx); err != nil {
		return err
	}
	if err := b.startWorkers(ctx, on); err != nil {
		return err
	}
	if err := b.waitSettled(ctx, on, b.payments(ctx, "warm-on-", "rt-fresh-"), 2*time.Minute); err != nil {
		return err
	}
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

// payments counts the payments whose keys start with one of prefixes
// (bench.js names every key <RUN>-<n>).
func (b *bench) payments(ctx context.Context, prefixes ...string) int {
	n := 0
	for _, p := range prefixes {
		var c int
		if err := b.cl.e2e.QueryRow(ctx, `SELECT count(*) FROM payments WHERE idempotency_key LIKE $1 || '%'`, p).Scan(&c); err == nil {
			n += c
		}
	}
	return n
}

// waitSettled waits until the variant's workers have settled want payments.
func (b *bench) waitSettled(ctx context.Context, v *variant, want int, max time.Duration) error {
	deadline := time.Now().Add(max)
	for {
		got, err := b.settled(ctx, v)
		if err == nil && got >= want {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			b.note("the %s workers settled %d of %d payments within %s", v.Name, got, want, max)
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// apiPhase runs one k6 phase of Phase seconds against v and measures it:
// throughput, latency, what the workers settled meanwhile, CPU per process
// group; then waits for the backlog to drain.
func (b *bench) apiPhase(ctx context.Context, run string, v *variant, all []*variant, env map[string]string) (results.Phase, error) {
	secs := b.cfg.Phase.Seconds()
	env["TARGETS"], env["RUN"], env["DURATION"] = v.targets(), run, strconv.Itoa(int(secs))+"s"
	charging := len(v.workerProcs) > 0 // alone: the variant's workers are stopped
	settled := func() (int, error) {
		if !charging {
			return 0, nil
		}
		return b.settled(ctx, v)
	}
	b.vacuum(ctx)
	b.rewriteAOF(ctx)
	settled0, err := settled()
	if err != nil {
		return results.Phase{}, err
	}
	redis0, redisOK := b.redisNow(ctx)
	span := cpu.Start(b.e2eRoots(all))
	load := cpu.LoadAvg()
	t0 := time.Now()
	profiled := func() {}
	if b.cfg.Profile && strings.HasPrefix(run, "sat0-") {
		profiled = b.profile(ctx, run, v, int(secs)-2)
	}
	s, err := b.k6(ctx, run, b.cfg.Phase+3*time.Minute, env)
	profiled()
	if err != nil {
		return results.Phase{}, err
	}
	settled1, err := settled()
	if err != nil {
		return results.Phase{}, err
	}
	p := results.Phase{
		Name: run, Accepted: float64(s.Accepted) / secs, Replayed: float64(s.Replayed) / secs,
		Failed: s.Failed, Dropped: s.Dropped, Charged: float64(settled1-settled0) / secs,
		P50MS: s.P50MS, P99MS: s.P99MS, Load: load,
		CPU: span.Stop(time.Since(t0).Seconds(), map[string]float64{"k6": s.CPU}),
	}
	p.AOFRewrites = b.aofRewritesSince(ctx, run, redis0, redisOK)
	if s.Failed > 0 {
		b.note("%s: %d requests failed %v", run, s.Failed, s.FailedBy)
	}
	if charging {
		p.DrainedIn = b.drain(ctx, 2*time.Minute)
	}
	return p, nil
}

// alone measures v's two stages one at a time, so that neither takes cores
// from the other: the api at saturation with v's workers stopped, then v's
// workers, started again, charging the backlog that phase left while no
// request arrives.
func (b *bench) alone(ctx context.Context, run string, v *variant, all []*variant) (results.Alone, error) {
	b.stopWorkers(v)
	api, err := b.apiPhase(ctx, run, v, all, map[string]string{
		"MODE": "fresh", "LOAD": "vus", "VUS": strconv.Itoa(b.cfg.SatVUs)})
	if err != nil {
		return results.Alone{}, err
	}
	d, err := b.drainAlone(ctx, v, all)
	b.logf("  %s: api %.0f/s (p50 %.1f ms, %.2f ms CPU per request); workers %.0f/s over a backlog of %d (%.2f ms CPU per payment)",
		run, api.Accepted, api.P50MS, api.CPUPerRequest(), d.Charged, d.Backlog, d.CPUPerPayment())
	return results.Alone{API: api, Drain: d}, err
}

// drainAlone starts v's workers on the backlog of payments pending and
// measures how fast they settle it. The rate is taken between 10% and 90%
// of the backlog settled, from the workers' own counters polled every 100
// ms: the processes' start and the last stragglers are left out.
func (b *bench) drainAlone(ctx context.Context, v *variant, all []*variant) (results.Drain, error) {
	b.vacuum(ctx) // the api phase before it inserted the backlog
	b.rewriteAOF(ctx)
	backlog, err := b.pending(ctx)
	d := results.Drain{Backlog: backlog}
	if err != nil {
		return d, err
	}
	t0 := time.Now()
	if err := b.startWorkers(ctx, v); err != nil {
		return d, err
	}
	redis0, redisOK := b.redisNow(ctx)
	span := cpu.Start(b.e2eRoots(all))
	ready := time.Now()
	base, err := b.settled(ctx, v)
	if err != nil {
		return d, err
	}
	var t10, t90 time.Time
	var n10, n90 int
	deadline := time.Now().Add(3 * time.Minute)
	for {
		n, err := b.settled(ctx, v)
		if err != nil {
			return d, err
		}
		now := time.Now()
		if t10.IsZero() && n >= backlog/10 {
			t10, n10 = now, n
		}
		if t90.IsZero() && n >= backlog*9/10 {
			t90, n90 = now, n
		}
		if n >= backlog {
			d.Settled = n - base
			break
		}
		if now.After(deadline) || ctx.Err() != nil {
			d.Settled = n - base
			b.note("%s workers alone settled %d of a backlog of %d within 3 minutes", v.Name, n, backlog)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	d.CPUSpan = time.Since(ready).Seconds()
	d.CPU = span.Stop(d.CPUSpan, nil)
	d.Seconds = time.Since(t0).Seconds()
	d.AOFRewrites = b.aofRewritesSince(ctx, v.Name+" workers alone", redis0, redisOK)
	if !t90.IsZero() && t90.After(t10) {
		d.Charged = float64(n90-n10) / t90.Sub(t10).Seconds()
	}
	// Settled counts charged and declined; a payment retried later (a psp
	// error) is still pending: wait for the rest like every other phase.
	b.drain(ctx, 2*time.Minute)
	return d, nil
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

// sustainSearch runs the whole pipeline (boundary on) at fixed rates, as
// fractions of the colocated ceiling C: 0.6C (the target) first; if that
// holds, 0.7C and 0.8C; if not, 0.4C, then 0.5C if 0.4C held or 0.3C and
// 0.2C while they do not; then once halfway between the highest rate that
// held and the lowest that failed (0.45C when 0.4C held and 0.5C failed).
// At most five runs; a quick run tries 0.6C and, if it fails, 0.4C. Then
// the copy without the boundary runs at the rates offFraction picks.
func (b *bench) sustainSearch(ctx context.Context, e *results.E2E, on, off *variant) error {
	ceiling := b.cfg.Ceiling
	if b.res.Coloc != nil && b.res.Coloc.Ceiling() > 0 {
		ceiling = b.res.Coloc.Ceiling()
	}
	if ceiling <= 0 {
		b.note("no colocated ceiling: the sustained run is skipped")
		return nil
	}
	tries := 5
	if b.cfg.Quick {
		tries = 2
	}
	runs, held, failed, err := b.sustainRuns(ctx, 0.6, tries, ceiling, on, off, nextFraction)
	e.Sustained = runs
	if err != nil {
		return err
	}

	// The same pipeline without the boundary, as a reference: does it hold
	// the target rate the boundary's copy failed? Without it, a missed
	// target cannot be told apart from a pipeline that is too slow here.
	if b.cfg.BaselineAPI != "" {
		return nil // the "off" copy runs another api with the boundary on
	}
	offTries := 3
	if b.cfg.Quick {
		offTries = 1
	}
	e.SustainedOff, _, _, err = b.sustainRuns(ctx, offFraction(0, false, nil, nil, held, failed), offTries, ceiling, off, on,
		func(frac float64, ok bool, offHeld, offFailed []float64) float64 {
			return offFraction(frac, ok, offHeld, offFailed, held, failed)
		})
	return err
}

// sustainRuns runs v's sustained runs, at most tries, from frac of the
// ceiling on, each next rate chosen by next (0 stops), and returns the
// runs and the fractions that held and failed. On an error it returns the
// runs done so far.
func (b *bench) sustainRuns(ctx context.Context, frac float64, tries int, ceiling float64, v, other *variant,
	next func(frac float64, ok bool, held, failed []float64) float64) (runs []results.Sustained, held, failed []float64, err error) {
	for ; frac > 0 && tries > 0; tries-- {
		s, err := b.sustainAt(ctx, frac, ceiling, v, other)
		if err != nil {
			return runs, held, failed, err
		}
		runs = append(runs, s)
		if s.OK {
			held = append(held, frac)
		} else {
			failed = append(failed, frac)
		}
		frac = next(frac, s.OK, held, failed)
	}
	return runs, held, failed, nil
}

// sustainAt runs v (the other copy idle) at frac of the ceiling, rounded
// to 10 payments/s, and logs the result.
func (b *bench) sustainAt(ctx context.Context, frac, ceiling float64, v, other *variant) (results.Sustained, error) {
	rate := roundTo(frac*ceiling, 10)
	s, err := b.sustain(ctx, rate, v, []*variant{v, other})
	if err != nil {
		return s, err
	}
	b.logf("  sustained %.0f/s (%.2gC), %s: held %v %s (accepted %d, charged %d, backlog %d -> %d, slope %.1f/s; Redis %.0f bytes per payment, %s records, %d AOF rewrite(s); autovacuum of %v)",
		rate, frac, v.Name, s.OK, s.Why, s.Accepted, s.Charged, s.PendingStart, s.PendingEnd, s.BacklogSlope,
		s.RedisBytesPerPayment, s.RecordEncoding, s.Phase.AOFRewrites, s.Autovacuumed)
	return s, nil
}

// offFraction picks the next rate, as a fraction of the ceiling, for the
// boundary-off copy's sustained runs, or 0 to stop; frac 0 asks for the
// first. These runs are a reference for the boundary-on copy's result
// (onHeld, onFailed), not a search of their own: they start at the lowest
// rate from the target (0.6) up that the on copy failed (0.05 above its
// highest held when it failed none), go up 0.05 while they hold, and down
// 0.05 while they fail, but not below the on copy's highest held rate: by
// then the answer is "no faster than with the boundary". They stop when
// they cross from held to failed or back.
func offFraction(frac float64, ok bool, held, failed, onHeld, onFailed []float64) float64 {
	const eps = 1e-9
	if frac == 0 {
		start := 0.0
		for _, f := range onFailed {
			if f >= 0.6-eps && (start == 0 || f < start) {
				start = f
			}
		}
		if start == 0 && len(onHeld) > 0 {
			start = slices.Max(onHeld) + 0.05
		}
		return start
	}
	next := frac + 0.05
	if !ok {
		next = frac - 0.05
	}
	switch {
	case ok && len(failed) > 0: // held just below a failed rate: that is the limit
		return 0
	case !ok && len(held) > 0: // failed just above a held rate
		return 0
	case !ok && len(onHeld) > 0 && next < slices.Max(onHeld)-eps:
		return 0
	case next <= eps || next > 1+eps:
		return 0
	}
	return next
}

// nextFraction picks the next fraction of the ceiling to try, or 0 to stop:
// steps of 0.1 until a rate fails above one that held, then once halfway
// (0.05) between the two.
func nextFraction(frac float64, ok bool, held, failed []float64) float64 {
	const eps = 1e-9
	lowestFailed, highestHeld := 10.0, 0.0
	for _, f := range failed {
		lowestFailed = min(lowestFailed, f)
	}
	for _, f := range held {
		highestHeld = max(highestHeld, f)
	}
	switch {
	case ok && frac+0.1 < lowestFailed-eps && frac < 0.85:
		return frac + 0.1
	case ok && frac+0.05 < lowestFailed-eps && len(failed) > 0:
		return frac + 0.05
	case ok:
		return 0
	case frac >= 0.6-eps && len(held) == 0:
		return 0.4
	case len(held) == 0 && frac > 0.25:
		return frac - 0.1
	case len(held) > 0 && highestHeld+0.05 < frac-eps:
		return highestHeld + 0.05
	}
	return 0
}

func roundTo(x, unit float64) float64 { return float64(int(x/unit+0.5)) * unit }

// sustain offers rate payments/s for Sustain and checks that the pipeline
// kept up: at least 99% of the offered payments accepted (at most 0.1%
// failed, k6 dropped at most 0.5%), as many
// payments charged during the run as accepted (less at most two seconds'
// worth still in flight), and no backlog growth over the second half (a
// least-squares slope of the pending count under 2% of the rate per second).
func (b *bench) sustain(ctx context.Context, rate float64, v *variant, all []*variant) (results.Sustained, error) {
	b.phase(fmt.Sprintf("e2e: sustained %.0f payments/s", rate))
	secs := b.cfg.Sustain.Seconds()
	// No vacuum first: a sustained run is not one side of a pair; it runs
	// with autovacuum as a deployment does.
	s := results.Sustained{Rate: rate, SampleEvery: 1}
	settled0, err := b.settled(ctx, v)
	if err != nil {
		return s, err
	}
	if s.PendingStart, err = b.pending(ctx); err != nil {
		return s, err
	}
	run := fmt.Sprintf("sus-%s-%.0f", v.Name, rate) // also the keys' prefix: unique per run
	commits0 := b.pgCommits(ctx)
	redis0, redisOK := b.redisNow(ctx)
	vacuums0 := b.autovacuums(ctx)
	span := cpu.Start(b.e2eRoots(all))
	load := cpu.LoadAvg()
	t0 := time.Now()
	wait := b.k6Async(ctx, run, b.cfg.Sustain+3*time.Minute, map[string]string{
		"TARGETS": v.targets(), "MODE": "fresh", "LOAD": "rate", "RATE": strconv.FormatFloat(rate, 'f', 0, 64),
		// A VU per two payments/s up front: k6 must not be what drops payments
		// when a moment of latency needs more clients in flight.
		"PRE_VUS":  strconv.Itoa(max(100, int(rate/2))),
		"DURATION": strconv.Itoa(int(secs)) + "s", "RUN": run,
	})
	var (
		mu        sync.Mutex
		samples   []float64
		rewriting []bool
		vacuuming []bool
		stop      = make(chan struct{})
		done      = make(chan struct{})
	)
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if n, err := b.pending(ctx); err == nil {
				r, _ := b.redisNow(ctx)
				vac := b.vacuuming(ctx)
				mu.Lock()
				samples = append(samples, float64(n))
				rewriting = append(rewriting, r.Rewriting)
				vacuuming = append(vacuuming, vac)
				mu.Unlock()
			}
		}
	}()
	k, err := wait()
	usage := span.Stop(time.Since(t0).Seconds(), map[string]float64{"k6": k.CPU})
	close(stop)
	<-done
	if err != nil {
		return s, err
	}
	settled1, err := b.settled(ctx, v)
	if err != nil {
		return s, err
	}
	if s.PendingEnd, err = b.pending(ctx); err != nil {
		return s, err
	}
	s.Phase.AOFRewrites = b.aofRewritesSince(ctx, run, redis0, redisOK)
	s.Autovacuumed = autovacuumedSince(vacuums0, b.autovacuums(ctx))
	s.DrainedIn = b.drain(ctx, 2*time.Minute) // settle the run's payments before counting commits
	// after the drain, so that the workers' half of each record is in
	if v.Strategy != "off" { // the copy without the boundary leaves no record
		if redis1, ok := b.redisNow(ctx); ok && redisOK && k.Accepted > 0 {
			s.RedisBytesPerPayment = (redis1.UsedMemory - redis0.UsedMemory) / float64(k.Accepted)
		}
		s.RecordEncoding = b.recordEncoding(ctx)
	}
	if k.Accepted > 0 {
		s.PGCommits = float64(b.pgCommits(ctx)-commits0) / float64(k.Accepted)
	}
	s.Pending, s.Rewriting, s.Vacuuming = samples, rewriting, vacuuming
	for _, x := range samples {
		s.PendingMax = max(s.PendingMax, int(x))
	}
	s.Accepted, s.Charged = k.Accepted, settled1-settled0
	s.BacklogSlope = slope(samples[len(samples)/2:])
	s.Phase = results.Phase{Name: run, Accepted: float64(k.Accepted) / secs, Charged: float64(s.Charged) / secs,
		Failed: k.Failed, Dropped: k.Dropped, P50MS: k.P50MS, P99MS: k.P99MS, Load: load,
		CPU: usage, AOFRewrites: s.Phase.AOFRewrites}
	want := rate * secs
	switch {
	case float64(k.Failed) > 0.001*want:
		s.Why = fmt.Sprintf("%d requests failed %v", k.Failed, k.FailedBy)
	case float64(k.Dropped) > 0.005*want || float64(k.Accepted) < 0.99*want:
		s.Why = fmt.Sprintf("accepted %d of %.0f offered (k6 dropped %d): the api fell behind", k.Accepted, want, k.Dropped)
	case float64(s.Charged) < float64(k.Accepted)-2*rate:
		// two seconds' worth may still be in flight when the load stops
		s.Why = fmt.Sprintf("charged %d of %d accepted: the workers fell behind", s.Charged, k.Accepted)
	case s.BacklogSlope > 0.02*rate:
		s.Why = fmt.Sprintf("backlog grew %.1f payments/s over the second half", s.BacklogSlope)
	default:
		s.OK = true
	}
	if !s.OK && s.Phase.AOFRewrites > 0 {
		s.Why += fmt.Sprintf("; Redis rewrote its AOF during the run (%d×)", s.Phase.AOFRewrites)
	}
	if !s.OK && len(s.Autovacuumed) > 0 {
		s.Why += "; autovacuum of " + strings.Join(s.Autovacuumed, ", ") + " during the run"
	}
	s.Phase.DrainedIn = s.DrainedIn
	return s, nil
}

// pgCommits sums pg_stat_database.xact_commit over the e2e databases.
// Postgres updates these counters asynchronously (at most every 0.5 s), so
// it waits a second first.
func (b *bench) pgCommits(ctx context.Context) int64 {
	time.Sleep(time.Second)
	var n int64
	_ = b.cl.e2e.QueryRow(ctx, `SELECT coalesce(sum(xact_commit), 0)::bigint FROM pg_stat_database WHERE datname = ANY($1)`,
		[]string{dbE2E, dbPSP}).Scan(&n)
	return n
}

// slope is the least-squares slope of ys against their index (per sample).
func slope(ys []float64) float64 {
	n := float64(len(ys))
	if n < 2 {
		return 0
	}
	var sx, sy, sxy, sxx float64
	for i, y := range ys {
		x := float64(i)
		sx, sy, sxy, sxx = sx+x, sy+y, sxy+x*y, sxx+x*x
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}
