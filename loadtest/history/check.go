package history

import (
	"cmp"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Op is one HTTP attempt in a key's history.
type Op struct {
	Client string    // who sent it (k6 VU, iteration, copy); attempts of one client never overlap
	Start  time.Time // before the request, on the client's clock
	End    time.Time // after the answer (or the error), on the client's clock
	In     Input
	Out    Output
}

// Partition is the history of one key: its attempts and the final read.
type Partition struct {
	Key   string // merchant:key
	Ops   []Op
	Final Input // Final true, Key set
}

// Verdict is the outcome of checking a history.
type Verdict string

// The verdicts; Unknown (the checker timed out) fails like Illegal.
const (
	VerdictOK      Verdict = "ok"
	VerdictIllegal Verdict = "illegal"
	VerdictUnknown Verdict = "unknown"
)

// Result is the verdict on a set of partitions.
type Result struct {
	Verdict    Verdict       `json:"verdict"` // ok only if every partition is ok
	Partitions int           `json:"partitions"`
	Operations int           `json:"operations"` // attempts and final reads
	Ambiguous  int           `json:"ambiguous"`  // attempts with an unknown outcome
	Concurrent int           `json:"concurrent"` // partitions where two clients' attempts overlapped in time
	Took       time.Duration `json:"took_ns"`
	Violations []Violation   `json:"violations"`
}

// Violation is one partition that is not ok.
type Violation struct {
	Key     string   `json:"key"`
	Verdict Verdict  `json:"verdict"`
	Ops     []string `json:"ops"` // its operations by start time, described relative to the run's start
	part    Partition
}

// Config tunes Check.
type Config struct {
	// Timeout bounds the check of one partition (default 10s); a partition
	// that runs out of time is Unknown.
	Timeout time.Duration
	// Start is the run's start; operation times are described relative to it.
	Start time.Time
}

// Check checks every partition against the model, independently and in
// parallel, and returns the verdict with every violating partition.
func Check(parts []Partition, cfg Config) Result {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	t0 := time.Now()
	r := Result{Verdict: VerdictOK, Partitions: len(parts)}
	verdicts := make([]Verdict, len(parts))
	var wg sync.WaitGroup
	next := make(chan int)
	model := Model()
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := range next {
				verdicts[i] = verdictOf(porcupine.CheckOperationsTimeout(model, Operations(parts[i]), cfg.Timeout))
			}
		})
	}
	for i, p := range parts {
		next <- i
		r.Operations += len(p.Ops) + 1
		for _, op := range p.Ops {
			if op.Out.Answer == AnswerAmbiguous {
				r.Ambiguous++
			}
		}
		if concurrent(p) {
			r.Concurrent++
		}
	}
	close(next)
	wg.Wait()
	for i, v := range verdicts {
		if v == VerdictOK {
			continue
		}
		if r.Verdict == VerdictOK || v == VerdictUnknown {
			r.Verdict = v
		}
		r.Violations = append(r.Violations, Violation{Key: parts[i].Key, Verdict: v, Ops: describeOps(parts[i], cfg.Start), part: parts[i]})
	}
	slices.SortFunc(r.Violations, func(a, b Violation) int { return cmp.Compare(a.Key, b.Key) })
	r.Took = time.Since(t0)
	return r
}

func verdictOf(c porcupine.CheckResult) Verdict {
	switch c {
	case porcupine.Ok:
		return VerdictOK
	case porcupine.Illegal:
		return VerdictIllegal
	}
	return VerdictUnknown
}

// WriteHTML writes porcupine's visualization of the violating partitions
// of r (nothing to write when there are none: it returns false).
func (r Result) WriteHTML(w io.Writer, timeout time.Duration) (bool, error) {
	if len(r.Violations) == 0 {
		return false, nil
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	var ops []porcupine.Operation
	for _, v := range r.Violations {
		ops = append(ops, Operations(v.part)...)
	}
	model := Model()
	_, info := porcupine.CheckOperationsVerbose(model, ops, timeout*time.Duration(len(r.Violations)))
	return true, porcupine.Visualize(model, info, w)
}

// Operations turns p into porcupine operations, in microseconds of the
// client's clock. An ambiguous attempt's interval is stretched to just
// before the final read, since it may take effect after the client gave
// up; the final read starts after every attempt ended.
func Operations(p Partition) []porcupine.Operation {
	clients := map[string]int{}
	var final int64
	for _, op := range p.Ops {
		if _, ok := clients[op.Client]; !ok {
			clients[op.Client] = len(clients)
		}
		final = max(final, op.Start.UnixMicro(), op.End.UnixMicro())
	}
	final += 1000
	ops := make([]porcupine.Operation, 0, len(p.Ops)+1)
	for _, op := range p.Ops {
		call, ret := op.Start.UnixMicro(), max(op.End.UnixMicro(), op.Start.UnixMicro())
		if op.Out.Answer == AnswerAmbiguous {
			ret = final - 1
		}
		in := op.In
		in.Key = p.Key
		ops = append(ops, porcupine.Operation{ClientId: clients[op.Client], Input: in, Call: call, Output: op.Out, Return: ret})
	}
	fin := p.Final
	fin.Key, fin.Final = p.Key, true
	ops = append(ops, porcupine.Operation{ClientId: len(clients), Input: fin, Call: final, Output: Output{}, Return: final + 1})
	return ops
}

// concurrent reports whether two attempts of different clients overlapped.
func concurrent(p Partition) bool {
	for i, a := range p.Ops {
		for _, b := range p.Ops[i+1:] {
			if a.Client != b.Client && !a.Start.After(b.End) && !b.Start.After(a.End) {
				return true
			}
		}
	}
	return false
}

func describeOps(p Partition, start time.Time) []string {
	ops := slices.Clone(p.Ops)
	slices.SortStableFunc(ops, func(a, b Op) int { return a.Start.Compare(b.Start) })
	out := make([]string, 0, len(ops)+1)
	at := func(t time.Time) string { return fmt.Sprintf("t+%.3fs", t.Sub(start).Seconds()) }
	for _, op := range ops {
		out = append(out, fmt.Sprintf("%s..%s %s: %s", at(op.Start), at(op.End), op.Client, Describe(op.In, op.Out)))
	}
	fin := p.Final
	fin.Key, fin.Final = p.Key, true
	out = append(out, Describe(fin, Output{}))
	return out
}
