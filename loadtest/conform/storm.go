package conform

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// Attempt is one request of the storm, as the history records it.
type Attempt struct {
	Key     string   `json:"key"`
	Client  int      `json:"client"`
	Try     int      `json:"try"`
	Payload string   `json:"payload"` // fingerprint of the body sent
	Class   string   `json:"class"`   // ok, mismatch, no_effect, ambiguous
	Ex      Exchange `json:"-"`
}

// FaultRun is one run of the fault command.
type FaultRun struct {
	At     time.Duration `json:"at_ns"` // after the storm's start
	Took   time.Duration `json:"took_ns"`
	Output string        `json:"output,omitempty"`
	Err    string        `json:"error,omitempty"`
}

// StormReport is what the storm did and what its history check found.
type StormReport struct {
	Keys      int            `json:"keys"`
	Clients   int            `json:"clients"`
	Attempts  int            `json:"attempts"`
	GaveUp    int            `json:"gave_up"` // clients out of tries
	Statuses  map[string]int `json:"statuses"`
	Took      time.Duration  `json:"took_ns"`
	Faults    []FaultRun     `json:"faults,omitempty"`
	Effects   map[int]int    `json:"effects,omitempty"` // effect count -> keys
	ReadErrs  []string       `json:"effect_errors,omitempty"`
	Verdict   Verdict        `json:"verdict"`
	Start     time.Time      `json:"start"`
	history   []Attempt
	operation []porcupine.Operation
}

// backoff is the k6 client's schedule (loadtest/k6/lib/client.js): after
// attempt n, 100 ms doubling up to 3 s with equal jitter, and at least what
// Retry-After asks plus up to 250 ms.
func backoff(n int, h http.Header, rnd *rand.Rand) time.Duration {
	exp := min(3000*time.Millisecond, 100*time.Millisecond<<(n-1))
	if n > 6 {
		exp = 3000 * time.Millisecond
	}
	d := exp/2 + time.Duration(rnd.Float64()*float64(exp/2))
	if ra := retryAfter(h); ra >= 0 {
		d = max(d, ra+time.Duration(rnd.Float64()*float64(250*time.Millisecond)))
	}
	return d
}

// retryable: the client tries again after these.
func retryable(ex Exchange) bool {
	return ex.Status == 0 || ex.Status == http.StatusConflict || ex.Status == http.StatusTooManyRequests || ex.Status >= 500
}

// storm runs t.Storm and checks its history.
func (t Target) storm(ctx context.Context, progress func(string)) *StormReport {
	s := t.Storm
	r := &StormReport{Keys: s.Keys, Clients: s.Clients, Statuses: map[string]int{}, Start: time.Now()}
	keys := make([]string, s.Keys)
	for i := range keys {
		keys[i] = newKey("s" + strconv.Itoa(i))
	}
	fp := map[string]string{"a": fingerprint([]byte(t.body("a"))), "b": fingerprint([]byte(t.body("b")))}
	var (
		mu       sync.Mutex
		attempts atomic.Int64
		done     atomic.Int64
		gaveUp   atomic.Int64
	)
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		for i, at := range s.FaultAt {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(r.Start.Add(at))):
			}
			f := FaultRun{At: time.Since(r.Start)}
			cmd := exec.CommandContext(ctx, "sh", "-c", s.FaultCommand)
			cmd.Env = append(os.Environ(), "CONFORM_FAULT_INDEX="+strconv.Itoa(i))
			t0 := time.Now()
			out, err := cmd.CombinedOutput()
			f.Took, f.Output = time.Since(t0), string(out)
			if err != nil {
				f.Err = err.Error()
			}
			progress(fmt.Sprintf("fault %d at %s: %s", i, f.At.Round(time.Millisecond), firstLine(f.Output, f.Err)))
			mu.Lock()
			r.Faults = append(r.Faults, f)
			mu.Unlock()
		}
	}()
	stopTick := make(chan struct{})
	go func() {
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		for {
			select {
			case <-stopTick:
				return
			case <-tk.C:
				progress(fmt.Sprintf("storm: %d attempts, %d/%d keys done", attempts.Load(), done.Load(), s.Keys))
			}
		}
	}()
	sem := make(chan struct{}, s.Parallel)
	var wg sync.WaitGroup
	for ki, key := range keys {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done(); done.Add(1) }()
			// Client 0 of every OtherEvery-th key sends another payload: at
			// once with the others on half of those keys, after them on the
			// other half (so a 2xx or a 422 for it is deterministic there).
			other := s.OtherEvery > 0 && ki%s.OtherEvery == 0
			after := other && (ki/s.OtherEvery)%2 == 1
			var cw, others sync.WaitGroup
			if other {
				others.Add(s.Clients - 1)
			}
			for c := 0; c < s.Clients; c++ {
				cw.Add(1)
				go func() {
					defer cw.Done()
					payload := "a"
					if other && c == 0 {
						payload = "b"
						if after {
							others.Wait()
						}
					} else if other {
						defer others.Done()
					}
					rnd := rand.New(rand.NewPCG(uint64(s.Seed), uint64(ki)<<16|uint64(c)))
					for try := 1; ; try++ {
						ex := t.do(ctx, request{method: t.Method, url: t.URL, key: ptr(key), cred: "a", payload: payload})
						attempts.Add(1)
						mu.Lock()
						r.history = append(r.history, Attempt{Key: key, Client: c, Try: try, Payload: fp[payload], Class: classify(ex), Ex: ex})
						mu.Unlock()
						if !retryable(ex) || ctx.Err() != nil {
							return
						}
						if try >= s.MaxTries {
							gaveUp.Add(1)
							return
						}
						select {
						case <-ctx.Done():
							return
						case <-time.After(backoff(try, ex.Header, rnd)):
						}
					}
				}()
			}
			cw.Wait()
		}()
	}
	wg.Wait()
	close(stopTick)
	<-faultsDone
	r.Took = time.Since(r.Start)
	r.Attempts, r.GaveUp = int(attempts.Load()), int(gaveUp.Load())
	for _, a := range r.history {
		st := "none"
		if a.Ex.Status != 0 {
			st = strconv.Itoa(a.Ex.Status)
		}
		r.Statuses[st]++
	}
	progress(fmt.Sprintf("storm: %d attempts on %d keys in %s; reading effects, checking the history", r.Attempts, s.Keys, r.Took.Round(time.Millisecond)))
	r.operation = t.operations(ctx, r, keys)
	r.Verdict = checkHistory(r.operation, 60*time.Second)
	return r
}

// finalReaders is how many final effect reads run at once.
const finalReaders = 16

// operations turns the history into porcupine operations, with a final
// read per key when the target can read effects. Attempts without an
// answer, or with a 5xx, stay open until the final reads.
func (t Target) operations(ctx context.Context, r *StormReport, keys []string) []porcupine.Operation {
	sort.Slice(r.history, func(i, j int) bool { return r.history[i].Ex.Start.Before(r.history[j].Ex.Start) })
	end := time.Now()
	ns := func(tm time.Time) int64 { return tm.Sub(r.Start).Nanoseconds() }
	ops := make([]porcupine.Operation, 0, len(r.history)+len(keys))
	firstOK := map[string]Exchange{}
	for _, a := range r.history {
		out := modelOutput{Class: a.Class, Status: a.Ex.Status}
		ret := ns(a.Ex.End)
		switch a.Class {
		case ansOK:
			out.Body = fingerprint(a.Ex.Body)
			if _, ok := firstOK[a.Key]; !ok {
				firstOK[a.Key] = a.Ex
			}
		case ansAmbiguous:
			ret = ns(end)
		}
		ops = append(ops, porcupine.Operation{ClientId: a.Client, Input: modelInput{Key: a.Key, Payload: a.Payload}, Call: ns(a.Ex.Start), Output: out, Return: ret})
	}
	if t.Effects == nil {
		return ops
	}
	// The final reads, finalReaders at a time (an effect command is a process each).
	type read struct {
		op  porcupine.Operation
		n   int
		err error
	}
	reads := make([]read, len(keys))
	sem := make(chan struct{}, finalReaders)
	var wg sync.WaitGroup
	for i, k := range keys {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			call := time.Now()
			n, err := t.Effects.Effects(ctx, EffectQuery{Key: k, Credential: "a", Location: t.location(firstOK[k])})
			reads[i] = read{n: n, err: err, op: porcupine.Operation{ClientId: -1, Input: modelInput{Key: k, Final: true}, Call: ns(call), Output: modelOutput{Effects: n}, Return: ns(time.Now())}}
		}()
	}
	wg.Wait()
	r.Effects = map[int]int{}
	for i, rd := range reads {
		if rd.err != nil {
			r.ReadErrs = append(r.ReadErrs, fmt.Sprintf("%s: %v", keys[i], rd.err))
			continue
		}
		r.Effects[rd.n]++
		ops = append(ops, rd.op)
	}
	return ops
}

func firstLine(s, err string) string {
	if err != "" {
		return "error: " + err
	}
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	if s == "" {
		return "ok"
	}
	return s
}
