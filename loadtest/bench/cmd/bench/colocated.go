package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/cpu"
	"github.com/oncepay/oncepay/loadtest/bench/pace"
	"github.com/oncepay/oncepay/loadtest/bench/results"
)

const (
	trivialAddr = "127.0.0.1:9191"
	colocStart  = 500.0 // first X of the first search
	colocStep   = 250.0 // X goes up (or down) by this much
	colocMax    = 4000.0
)

// colocated runs the colocated ceiling search Repeats times: every stage's
// bare work at X payments/s at the same time, X raised by colocStep until a
// stage falls behind, then once halfway between the last X that kept up
// and the first that did not. The first search starts at colocStart; later
// ones start one step below the previous ceiling (and go down if that
// fails).
func (b *bench) colocated(ctx context.Context) error {
	b.phase("colocated ceiling")
	stage, err := b.procs.Start("benchstage-http", []string{b.bin("benchstage"), "http", "-addr", trivialAddr},
		nil, b.cfg.Out, b.logPath("benchstage-http"))
	if err != nil {
		return err
	}
	if err := b.waitReady(ctx, stage, trivialAddr); err != nil {
		return err
	}
	defer stage.Stop(5 * time.Second)
	co := &results.Colocated{}
	b.res.Coloc = co
	start := colocStart
	for rep := range b.cfg.Repeats {
		run := results.ColocRun{}
		// try runs one step at x, records it and says whether every stage kept up
		try := func(x float64, note string) (bool, error) {
			step, err := b.colocStep(ctx, rep, len(run.Steps), x, stage.PID)
			if err != nil {
				return false, err
			}
			run.Steps = append(run.Steps, step)
			b.logf("  search %d: X=%.0f%s %s (machine busy %.2f of %.0f cores)", rep+1, x, note, verdict(step), step.CPU.MachineBusy, step.CPU.MachineCores)
			return step.KeptUp, nil
		}
		x := start
		passedAny, failedAny := false, false
		for x >= colocStep && x <= colocMax {
			kept, err := try(x, "")
			if err != nil {
				return err
			}
			if kept {
				passedAny = true
				run.Ceiling = math.Max(run.Ceiling, x)
				if failedAny { // came down to a passing X
					break
				}
				x += colocStep
			} else {
				failedAny = true
				if run.Knee == 0 || x < run.Knee {
					run.Knee = x
				}
				if passedAny { // went up to a failing X
					break
				}
				x -= colocStep
			}
		}
		if x, ok := halfway(run); ok {
			kept, err := try(x, " (halfway)")
			if err != nil {
				return err
			}
			if kept {
				run.Ceiling = x
			} else {
				run.Knee = x
			}
		}
		co.Runs = append(co.Runs, run)
		b.logf("  search %d: ceiling %.0f payments/s, knee %.0f", rep+1, run.Ceiling, run.Knee)
		if run.Ceiling > 0 {
			start = math.Max(colocStep, run.Ceiling-colocStep)
		}
	}
	b.logf("colocated ceiling (median of %d): %.0f payments/s, knee %.0f", len(co.Runs), co.Ceiling(), co.Knee())
	return nil
}

// halfway is the one X a search tries after its steps: halfway between
// the highest X that kept up and the lowest that fell behind, when both
// exist one step apart. Without it the ceiling moves in steps of
// colocStep, 25% of a ceiling of 1,000, so a stage that falls just short
// of a step (972 of 1,000/s) would report the step below (750). The
// sustained target is a fraction of this ceiling.
func halfway(run results.ColocRun) (float64, bool) {
	if run.Ceiling == 0 || run.Knee == 0 || run.Knee-run.Ceiling <= colocStep/2 {
		return 0, false
	}
	return (run.Ceiling + run.Knee) / 2, true
}

func verdict(s results.ColocStep) string {
	if s.KeptUp {
		return "kept up"
	}
	return "fell behind: " + strings.Join(s.Behind, ", ")
}

// colocStep runs every stage at x payments/s for Step, all at once.
func (b *bench) colocStep(ctx context.Context, rep, n int, x float64, httpPID int) (results.ColocStep, error) {
	secs := b.cfg.Step.Seconds()
	d := strconv.Itoa(int(secs))
	rate := strconv.FormatFloat(x, 'f', 0, 64)
	ins := fmt.Sprintf("pay_k%d_%d_i", rep, n)
	upd := fmt.Sprintf("pay_k%d_%d_u", rep, n)
	// Enough pending rows for the update stage even if one client does twice its share.
	if err := b.seedPending(ctx, upd, int(2*x*secs/pgbenchClients)+100); err != nil {
		return results.ColocStep{}, err
	}
	timeout := b.cfg.Step + 90*time.Second
	roots := b.harnessPIDs()
	roots["http"] = []int{httpPID}
	span := cpu.Start(roots)
	t0 := time.Now()
	load := cpu.LoadAvg()

	k6 := b.k6Async(ctx, fmt.Sprintf("coloc-%d-%d", rep, n), timeout, map[string]string{
		"TARGETS": "http://" + trivialAddr, "MODE": "fresh", "LOAD": "rate", "RATE": rate, "DURATION": d + "s",
		"RUN": fmt.Sprintf("k%d-%d", rep, n),
	})
	rds := b.async(ctx, "stage-redis", timeout, b.cfg.Repo, nil, b.bin("benchstage"), "redis", "-url", withRedisDB(b.cfg.RedisURL, 2),
		"-rate", rate, "-duration", d+"s", "-begin", "lua/begin.lua", "-complete", "lua/complete.lua")
	amq := b.async(ctx, "stage-amqp", timeout, b.cfg.Repo, nil, b.bin("benchstage"), "amqp", "-url", b.cfg.AMQPURL,
		"-rate", rate, "-duration", d+"s", "-queue", "bench.ceiling")
	// -L: a transaction that could only start more than a second late is
	// skipped and counted, so a stage that fell behind says so.
	pgi := b.async(ctx, "pgbench-coloc", timeout, b.cfg.Out, nil, b.pgbenchArgv("api_insert.sql",
		"-R", rate, "-L", "1000", "-T", d, "-D", "k=0", "-D", "p="+ins)...)
	pgu := b.async(ctx, "pgbench-coloc", timeout, b.cfg.Out, nil, b.pgbenchArgv("worker_update.sql",
		"-R", rate, "-L", "1000", "-T", d, "-D", "k=0", "-D", "p="+upd)...)

	step := results.ColocStep{Rate: x, Stages: map[string]results.Stage{}, Load: load}
	finished := map[string]float64{}
	var errs []string

	if s, err := k6(); err != nil {
		errs = append(errs, err.Error())
	} else {
		finished["k6"] = s.CPU
		want := x * secs
		ok := s.Failed == 0 && float64(s.Dropped) <= 0.01*want && float64(s.Accepted) >= 0.97*want
		step.Stages["http"] = results.Stage{Achieved: float64(s.Accepted) / secs, P50MS: s.P50MS, P99MS: s.P99MS, KeptUp: ok,
			Detail: fmt.Sprintf("dropped %d, failed %d", s.Dropped, s.Failed)}
	}
	for _, g := range []struct {
		name string
		wait func() (result, error)
	}{{"redis", rds}, {"amqp", amq}} {
		r, err := g.wait()
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		finished["stage-"+g.name] = r.CPU
		var pr struct {
			pace.Result
			ConsumerKeptUp *bool   `json:"consumer_kept_up"`
			ConsumeRate    float64 `json:"consume_rate"`
			Backlog        int     `json:"backlog_at_end"`
		}
		if err := json.Unmarshal([]byte(lastLine(r.Out)), &pr); err != nil {
			errs = append(errs, fmt.Sprintf("%s stage output: %v", g.name, err))
			continue
		}
		ok := pr.Result.KeptUp() && (pr.ConsumerKeptUp == nil || *pr.ConsumerKeptUp)
		st := results.Stage{Achieved: pr.Achieved, LagMS: pr.LagP99, P50MS: pr.LatP50, P99MS: pr.LatP99, KeptUp: ok}
		if pr.ConsumerKeptUp != nil {
			st.Detail = fmt.Sprintf("consumed %.0f/s, backlog %d", pr.ConsumeRate, pr.Backlog)
		}
		if pr.Errors > 0 || pr.Skipped > 0 {
			st.Detail = strings.TrimPrefix(st.Detail+fmt.Sprintf("; %d errors, %d skipped %s", pr.Errors, pr.Skipped, pr.FirstErr), "; ")
		}
		step.Stages[g.name] = st
	}
	for _, g := range []struct {
		name string
		wait func() (result, error)
	}{{"pg_insert", pgi}, {"pg_update", pgu}} {
		r, err := g.wait()
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		finished["pgbench-"+strings.TrimPrefix(g.name, "pg_")] = r.CPU
		pr, err := parsePGBench(r.Out)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		// pgbench -R draws Poisson arrivals, so the count itself varies by a
		// few percent in a short step: judge by lateness, not by the count.
		achieved := float64(pr.Processed) / secs
		ok := pr.Failed == 0 && float64(pr.Skipped+pr.Late) <= 0.01*float64(pr.Processed) && pr.LagAvgMS < 100 && achieved >= 0.9*x
		step.Stages[g.name] = results.Stage{Achieved: achieved, LagMS: pr.LagAvgMS, P50MS: pr.LatAvgMS, KeptUp: ok,
			Detail: fmt.Sprintf("latency avg %.1f ms, schedule lag avg %.1f ms (max %.0f), %d skipped, %d over 1 s",
				pr.LatAvgMS, pr.LagAvgMS, pr.LagMaxMS, pr.Skipped, pr.Late)}
	}
	step.CPU = span.Stop(time.Since(t0).Seconds(), finished)
	if len(errs) > 0 {
		return step, fmt.Errorf("colocated step X=%.0f: %s", x, strings.Join(errs, "; "))
	}
	step.KeptUp = true
	for _, name := range []string{"http", "redis", "pg_insert", "pg_update", "amqp"} {
		if !step.Stages[name].KeptUp {
			step.KeptUp = false
			step.Behind = append(step.Behind, name)
		}
	}
	return step, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// withRedisDB returns the redis:// URL u on database db.
func withRedisDB(u string, db int) string {
	i := strings.LastIndex(u, "/")
	if i < len("redis://") {
		return u + "/" + strconv.Itoa(db)
	}
	return u[:i+1] + strconv.Itoa(db)
}
