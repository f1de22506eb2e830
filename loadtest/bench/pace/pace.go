// Package pace runs work at a fixed arrival rate (an open model) and reports
// whether it kept up: how much was done, how late it started compared with
// its schedule, and how long each piece took.
//
// The colocated ceiling run uses it to drive the bare work of one stage
// (two EVALSHA per payment, a confirmed publish) at X per second.
package pace

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Result is what one Run did. Durations are in milliseconds so that the JSON
// form reads without conversion.
type Result struct {
	Rate      float64 `json:"rate"`      // the target, per second
	Seconds   float64 `json:"seconds"`   // wall time from the first schedule slot to the last completion
	Scheduled int     `json:"scheduled"` // slots in the schedule
	Done      int     `json:"done"`      // slots whose work returned nil
	Errors    int     `json:"errors"`    // slots whose work returned an error
	Skipped   int     `json:"skipped"`   // slots never started because they were over MaxLag late
	Achieved  float64 `json:"achieved"`  // Done per second of the schedule
	LagP50    float64 `json:"lag_p50_ms"`
	LagP99    float64 `json:"lag_p99_ms"`
	LatP50    float64 `json:"lat_p50_ms"`
	LatP99    float64 `json:"lat_p99_ms"`
	FirstErr  string  `json:"first_error,omitempty"`
}

// KeptUp reports whether the stage kept its schedule: at least 97% of the
// slots done and a p99 start lag under 250 ms.
func (r Result) KeptUp() bool {
	return r.Scheduled > 0 && float64(r.Done) >= 0.97*float64(r.Scheduled) && r.LagP99 < 250
}

// Config says how fast and for how long.
type Config struct {
	Rate     float64       // slots per second, > 0
	Duration time.Duration // length of the schedule
	// Workers is how many slots may run at once (default 64). A slot whose
	// turn comes while every worker is busy waits, and its lag grows.
	Workers int
	// MaxLag: a slot that could only start later than this is skipped and
	// counted, so that a stage that fell behind stops in bounded time
	// (default 2s).
	MaxLag time.Duration
}

// Run calls work once per slot of a uniform schedule of cfg.Rate per second
// for cfg.Duration, i in 0..n-1, and returns when every started slot has
// returned or ctx ends. work must be safe for concurrent use.
func Run(ctx context.Context, cfg Config, work func(ctx context.Context, i int) error) Result {
	if cfg.Workers <= 0 {
		cfg.Workers = 64
	}
	if cfg.MaxLag <= 0 {
		cfg.MaxLag = 2 * time.Second
	}
	n := int(cfg.Rate * cfg.Duration.Seconds())
	interval := time.Duration(float64(time.Second) / cfg.Rate)
	type slot struct {
		i   int
		due time.Time
	}
	slots := make(chan slot, cfg.Workers)
	var (
		mu       sync.Mutex
		lags     = make([]float64, 0, n)
		lats     = make([]float64, 0, n)
		res      = Result{Rate: cfg.Rate, Scheduled: n}
		wg       sync.WaitGroup
		start    = time.Now()
		lastDone time.Time
	)
	for range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range slots {
				began := time.Now()
				lag := began.Sub(s.due)
				if lag > cfg.MaxLag {
					mu.Lock()
					res.Skipped++
					lags = append(lags, ms(lag))
					mu.Unlock()
					continue
				}
				err := work(ctx, s.i)
				end := time.Now()
				mu.Lock()
				lags = append(lags, ms(lag))
				lats = append(lats, ms(end.Sub(began)))
				if err != nil {
					res.Errors++
					if res.FirstErr == "" {
						res.FirstErr = err.Error()
					}
				} else {
					res.Done++
				}
				lastDone = end
				mu.Unlock()
			}
		}()
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
schedule:
	for i := range n {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				break schedule
			case <-timer.C:
			}
		}
		select {
		case slots <- slot{i: i, due: due}:
		case <-ctx.Done():
			break schedule
		}
	}
	close(slots)
	wg.Wait()
	end := start.Add(cfg.Duration)
	if lastDone.After(end) {
		end = lastDone
	}
	res.Seconds = end.Sub(start).Seconds()
	res.Achieved = float64(res.Done) / cfg.Duration.Seconds()
	res.LagP50, res.LagP99 = Percentile(lags, 50), Percentile(lags, 99)
	res.LatP50, res.LatP99 = Percentile(lats, 50), Percentile(lats, 99)
	return res
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Percentile returns the p-th percentile (nearest rank) of xs, 0 for none.
// It sorts xs.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	k := int(float64(len(xs))*p/100+0.5) - 1
	return xs[min(max(k, 0), len(xs)-1)]
}
