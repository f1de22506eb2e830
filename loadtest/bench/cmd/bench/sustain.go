package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/cpu"
	"github.com/oncepay/oncepay/loadtest/bench/results"
)

// sustainSearch finds, for each copy, the highest rate the pipeline holds
// (see sustain), in at most SustainTries runs per copy, alternating. Both
// start at 0.8 of the median rate charged at saturation and move as
// nextRate says.
func (b *bench) sustainSearch(ctx context.Context, e *results.E2E) error {
	var charged []float64
	for _, s := range e.Saturation {
		charged = append(charged, s.On.Charged, s.Off.Charged)
	}
	start := max(50, roundTo(0.8*results.Median(charged), 10))
	runs, rates := []*[]results.Sustained{&e.Sustained, &e.SustainedOff}, []float64{start, start}
	for try := range b.cfg.SustainTries {
		for i := range b.copies {
			c := (i + try) % 2
			if rates[c] <= 0 {
				continue
			}
			run, err := b.sustain(ctx, rates[c], b.copies[c])
			if err != nil {
				return err
			}
			*runs[c] = append(*runs[c], run)
			b.logf("  held %v %s (%.2f ms CPU per charged payment)", run.OK, run.Why, run.CPUPerCharged(float64(b.cfg.SustainSeconds), false))
			rates[c] = nextRate(*runs[c])
		}
	}
	return nil
}

// nextRate picks the next rate of a sustained search from its runs so far,
// or 0 to stop: 15% up while every run held, 15% down while every run
// failed (not below 20/s), then halfway between the highest rate that held
// and the lowest that failed, rounded to 10/s, until they are 10/s apart.
func nextRate(runs []results.Sustained) float64 {
	held, failed := 0.0, 0.0
	for _, r := range runs {
		if r.OK {
			held = max(held, r.Rate)
		} else if failed == 0 || r.Rate < failed {
			failed = r.Rate
		}
	}
	last := runs[len(runs)-1].Rate
	switch {
	case failed == 0:
		return roundTo(last*1.15, 10)
	case held == 0 && last*0.85 < 20:
		return 0
	case held == 0:
		return roundTo(last*0.85, 10)
	}
	if mid := roundTo((held+failed)/2, 10); mid > held && mid < failed {
		return mid
	}
	return 0
}

func roundTo(x, unit float64) float64 { return float64(int(x/unit+0.5)) * unit }

// sustain offers rate payments/s to v for Sustain and checks that the
// pipeline kept up: at least 99% of the offered payments accepted (at most
// 0.1% failed, k6 dropped at most 0.5%), as many payments charged during
// the run as accepted (less at most two seconds' worth still in flight),
// and no backlog growth over the second half (a least-squares slope of the
// pending count under 2% of the rate per second). No vacuum or AOF rewrite
// precedes it: it runs with the housekeeping as it comes, and reports it.
func (b *bench) sustain(ctx context.Context, rate float64, v *variant) (results.Sustained, error) {
	b.phase(fmt.Sprintf("e2e: sustained %.0f payments/s, boundary %s", rate, v.Name))
	secs := float64(b.cfg.SustainSeconds)
	s := results.Sustained{Rate: rate}
	var err error
	if s.PendingStart, err = b.pending(ctx); err != nil {
		return s, err
	}
	run := fmt.Sprintf("sus-%s-%.0f-%d", v.Name, rate, time.Now().Unix()) // also the keys' prefix: unique per run
	commits0 := b.pgCommits(ctx)
	redis0, redisOK := b.redisNow(ctx)
	vacuums0 := b.autovacuums(ctx)
	pspDB := map[string][]int{"psp-db": b.pspBackends(ctx)}
	pspDB0, t0 := cpu.Trees(pspDB), time.Now()
	p, k, err := b.measure(ctx, run, v, map[string]string{"MODE": "fresh", "LOAD": "rate", "RATE": strconv.FormatFloat(rate, 'f', 0, 64),
		// A VU per two payments/s up front: k6 must not be what drops payments
		// when a moment of latency needs more clients in flight.
		"PRE_VUS": strconv.Itoa(max(100, int(rate/2)))}, time.Duration(b.cfg.SustainSeconds)*time.Second, func() {
		if n, err := b.pending(ctx); err == nil {
			s.Pending = append(s.Pending, float64(n))
		}
	})
	s.PSPDB = (cpu.Trees(pspDB)["psp-db"] - pspDB0["psp-db"]) / time.Since(t0).Seconds()
	if err != nil {
		return s, err
	}
	if s.PendingEnd, err = b.pending(ctx); err != nil {
		return s, err
	}
	s.Autovacuumed = autovacuumedSince(vacuums0, b.autovacuums(ctx))
	p.DrainedIn = b.drain(ctx, 2*time.Minute) // the run's payments settle before commits and memory are counted
	s.Phase = p
	if v.Strategy != "off" { // the copy without the boundary leaves no record
		if redis1, ok := b.redisNow(ctx); ok && redisOK && k.Accepted > 0 {
			s.RedisBytesPerPayment = (redis1.UsedMemory - redis0.UsedMemory) / float64(k.Accepted)
		}
	}
	if k.Accepted > 0 {
		s.PGCommits = float64(b.pgCommits(ctx)-commits0) / float64(k.Accepted)
	}
	s.Accepted, s.Charged = k.Accepted, int(p.Charged*secs+0.5)
	s.BacklogSlope = slope(s.Pending[len(s.Pending)/2:])
	want := rate * secs
	switch {
	case float64(k.Failed) > 0.001*want:
		s.Why = fmt.Sprintf("%d requests failed %v", k.Failed, k.FailedBy)
	case float64(k.Dropped) > 0.005*want || float64(k.Accepted) < 0.99*want:
		s.Why = fmt.Sprintf("accepted %d of %.0f offered (k6 dropped %d): the api fell behind", k.Accepted, want, k.Dropped)
	case float64(s.Charged) < float64(k.Accepted)-2*rate:
		s.Why = fmt.Sprintf("charged %d of %d accepted: the workers fell behind", s.Charged, k.Accepted)
	case s.BacklogSlope > 0.02*rate:
		s.Why = fmt.Sprintf("backlog grew %.1f payments/s over the second half", s.BacklogSlope)
	default:
		s.OK = true
	}
	if !s.OK && p.AOFRewrites > 0 {
		s.Why += fmt.Sprintf("; Redis rewrote its AOF during the run (%d×)", p.AOFRewrites)
	}
	if !s.OK && len(s.Autovacuumed) > 0 {
		s.Why += "; autovacuum of " + strings.Join(s.Autovacuumed, ", ") + " during the run"
	}
	return s, nil
}

// pspBackends are the pids of the Postgres backends serving the psp's
// database, bench's own connections left out.
func (b *bench) pspBackends(ctx context.Context) []int {
	var pids []int
	if err := b.cl.psp.QueryRow(ctx, `SELECT coalesce(array_agg(pid), '{}') FROM pg_stat_activity
		WHERE datname = $1 AND backend_type = 'client backend' AND application_name <> $2`, dbPSP, benchAppName).Scan(&pids); err != nil {
		b.note("psp backends: %v", err)
	}
	return pids
}

// pgCommits sums pg_stat_database.xact_commit over the e2e databases, after
// a second: Postgres updates the counters every 0.5 s at most.
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
