package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/oncepay/oncepay/internal/proc"
	"github.com/oncepay/oncepay/loadtest/bench/results"
)

// overload is the congestion-collapse phase (docs/perf-overload.md): two
// copies of the pipeline with the boundary on, this run's code ("new") and
// BENCH_BASE's ("base", built from a temporary git worktree), each two api
// replicas and two workers. Each copy's capacity is a closed-model run of
// 2 × SaturationVUs clients (enough to saturate it); then both copies are offered, in alternating
// order, an open-model load of each factor × the larger capacity, for
// OverloadSeconds each. Goodput is the payments accepted in a run that
// were charged once its backlog drained.
func (b *bench) overload(ctx context.Context) error {
	b.phase("overload: start the runtime")
	o := &results.Overload{BaseRef: b.cfg.Base, BaseCommit: b.baseCommit, Seconds: b.cfg.OverloadSeconds, LoadCPUs: b.cfg.LoadCPUs, Factors: b.cfg.OverloadFactors}
	b.res.Overload = o
	copies := overloadVariants(b.cfg.PortBase)
	b.copies = copies
	if err := b.purgeQueues(); err != nil {
		return err
	}
	if len(b.procs.Named("psp")) == 0 {
		if _, err := b.startPSP(ctx); err != nil {
			return err
		}
	}
	for _, v := range copies {
		if err := b.startAPIs(ctx, v); err != nil {
			return err
		}
		if err := b.startWorkers(ctx, v); err != nil {
			return err
		}
		if _, err := b.k6(ctx, "ov-warmup-"+v.Name, 2*time.Minute, map[string]string{
			"TARGETS": v.targets(), "LOAD": "count", "VUS": "16", "ITERATIONS": "600", "RUN": "ov-warm-" + v.Name}, nil); err != nil {
			return err
		}
	}
	top := 0.0
	for _, v := range copies {
		b.phase("overload: capacity of " + v.Name)
		p, err := b.overloadRun(ctx, v, "ov-cap-"+v.Name, 0, 0, time.Duration(b.cfg.PhaseSeconds)*time.Second,
			map[string]string{"LOAD": "vus", "VUS": strconv.Itoa(2 * b.cfg.SaturationVUs)})
		if err != nil {
			return err
		}
		o.Capacity = append(o.Capacity, p)
		top = max(top, p.Accepted)
		b.logf("  %s: accepted %.0f/s, goodput %.0f/s, api %.0f MiB, workers %.0f MiB", v.Name, p.Accepted, p.Goodput, p.APIRSS, p.WorkerRSS)
	}
	for i, f := range b.cfg.OverloadFactors {
		rate := int(f*top + 0.5)
		for j := range copies {
			v := copies[(i+j)%len(copies)]
			run := fmt.Sprintf("ov-x%g-%s", f, v.Name)
			b.phase(fmt.Sprintf("overload: %s at %d/s (%g × %.0f/s)", v.Name, rate, f, top))
			// k6 starts with the capacity run's clients per request/s
			// (factor × its VUs) and adds one only when every client waits
			// for an answer, as a caller's connection pool does: the api
			// holds the connections the answers need, not one per request
			// of the last second.
			// As many VUs as the answers can hold at k6's 10 s timeout would
			// be rate × 10; 3 s of the rate keeps k6's memory sane and the
			// drops it still makes are reported (Sent < Offered).
			p, err := b.overloadRun(ctx, v, run, f, float64(rate), time.Duration(b.cfg.OverloadSeconds)*time.Second, map[string]string{
				"LOAD": "rate", "RATE": strconv.Itoa(rate), "PRE_VUS": strconv.Itoa(int(f * float64(2*b.cfg.SaturationVUs))), "MAX_VUS": strconv.Itoa(3 * rate)})
			if err != nil {
				return err
			}
			o.Steps = append(o.Steps, p)
			c, _ := o.CapacityOf(v.Name)
			vd := results.Judge(c, p)
			b.logf("  goodput %.0f/s (%.2f× capacity), refused %.0f/s p99 %.1f ms, timed out %.0f/s, sent %.0f/s, api %.2f×, workers %.2f× RSS: ok=%v",
				p.Goodput, vd.GoodputRatio, p.Refused, p.RefusedP99, p.TimedOut, p.Sent, vd.APIGrowth, vd.WorkerGrowth, vd.OK())
		}
	}
	return nil
}

// overloadRun runs k6 with env against v for d, reads the RSS of v's
// processes as it ends, waits (at most 2 minutes) until none of the run's
// payments is pending and counts the charged ones.
func (b *bench) overloadRun(ctx context.Context, v *variant, run string, factor, offered float64, d time.Duration, env map[string]string) (results.OverloadPoint, error) {
	b.vacuum(ctx)
	secs := d.Seconds()
	env["MODE"], env["TARGETS"], env["RUN"], env["DURATION"] = "fresh", v.targets(), run, strconv.Itoa(int(secs))+"s"
	p := results.OverloadPoint{Copy: v.Name, Factor: factor, Offered: offered}
	s, err := b.k6(ctx, run, d+3*time.Minute, env, nil)
	if err != nil {
		return p, err
	}
	p.APIRSS, p.WorkerRSS = rssMiB(v.apiProcs), rssMiB(v.workerProcs)
	sent := s.Accepted + s.Replayed + s.Failed
	p.Sent, p.Accepted = float64(sent)/secs, float64(s.Accepted)/secs
	p.Refused, p.RefusedP99, p.RefusedBare = float64(s.Refused)/secs, s.RefusedP99MS, s.RefusedBare
	p.TimedOut = float64(s.FailedBy["0"]) / secs
	p.OtherFailed = float64(s.Failed-s.Refused-s.FailedBy["0"]) / secs
	p.AcceptedP99 = s.P99MS
	if s.Failed > 0 {
		b.note("%s: %d requests failed %v (k6 dropped %d)", run, s.Failed, s.FailedBy, s.Dropped)
	}
	start := time.Now()
	for time.Since(start) < 2*time.Minute && ctx.Err() == nil {
		if n, err := b.runPayments(ctx, run, "pending"); err == nil && n == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	p.DrainedIn = time.Since(start).Seconds()
	charged, err := b.runPayments(ctx, run, "succeeded")
	p.Goodput = float64(charged) / secs
	return p, err
}

// runPayments counts the payments of run (keys "<run>-<n>") in status.
func (b *bench) runPayments(ctx context.Context, run, status string) (int, error) {
	var n int
	err := b.cl.e2e.QueryRow(ctx, `SELECT count(*) FROM payments WHERE idempotency_key LIKE $1 AND status = $2`,
		run+"-%", status).Scan(&n)
	return n, err
}

// rssMiB sums VmRSS over ps, in MiB.
func rssMiB(ps []*proc.Proc) float64 {
	total := 0.0
	for _, p := range ps {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID))
		if err != nil {
			continue
		}
		total += parseVmRSS(string(raw))
	}
	return total
}

// parseVmRSS returns the VmRSS line of a /proc/<pid>/status in MiB (0 if
// it has none).
func parseVmRSS(status string) float64 {
	for line := range strings.Lines(status) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseFloat(f[0], 64)
				if err == nil {
					return kb / 1024
				}
			}
		}
	}
	return 0
}

// overloadVariants returns the phase's two copies, both with the boundary
// on, on ports base+10 to base+17 (ops listeners 20 higher), on their own
// exchanges and queues: "new" runs this run's build, "base" BENCH_BASE's.
func overloadVariants(base int) []*variant {
	return []*variant{
		{Name: "new", Strategy: "oncepay", APIs: []int{base + 10, base + 12}, Workers: []int{base + 11, base + 13},
			Exchange: "overload_new", Queue: "overload_new.charge"},
		{Name: "base", Strategy: "oncepay", APIs: []int{base + 14, base + 16}, Workers: []int{base + 15, base + 17},
			Exchange: "overload_base", Queue: "overload_base.charge", Build: "-base"},
	}
}

// buildBase builds BENCH_BASE's (default: the merge-base of HEAD and main) api and worker as api-base and worker-base,
// from a temporary git worktree in the run directory, removed afterwards.
func (b *bench) buildBase(ctx context.Context) error {
	dir, ref := filepath.Join(b.cfg.Out, "base"), b.cfg.Base
	if ref == "" {
		ref = firstLine(ctx, "git", "-C", b.cfg.Repo, "merge-base", "HEAD", "main")
		b.cfg.Base = "merge-base of HEAD and main"
	}
	if _, err := b.command(ctx, "build", time.Minute, b.cfg.Repo, nil, "git", "worktree", "add", "--detach", dir, ref); err != nil {
		return fmt.Errorf("BENCH_BASE %q: %w", ref, err)
	}
	defer func() {
		_, _ = b.command(context.WithoutCancel(ctx), "build", time.Minute, b.cfg.Repo, nil, "git", "worktree", "remove", "--force", dir)
	}()
	b.baseCommit = firstLine(ctx, "git", "-C", dir, "rev-parse", "--short", "HEAD")
	for _, s := range []string{"api", "worker"} {
		if _, err := b.command(ctx, "build", 5*time.Minute, dir, nil, "go", "build", "-o", b.bin(s+"-base"), "./services/"+s+"/cmd/"+s); err != nil {
			return err
		}
	}
	return nil
}
