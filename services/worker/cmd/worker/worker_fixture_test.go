package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// worker is a worker started in-process through run, on port 0.
type worker struct {
	name   string
	addr   string
	logs   *logSink
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// startWorker runs a worker with e's environment plus extra, waits until
// /readyz answers 200 and stops it at cleanup.
func (e *env) startWorker(name string, extra map[string]string) *worker {
	e.t.Helper()
	env := e.workerEnv(name, extra)
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{name: name, logs: newLogSink(), cancel: cancel, done: make(chan error, 1)}
	go func() {
		w.done <- run(ctx, []string{"worker"}, func(k string) string { return env[k] }, w.logs, w.logs)
	}()
	w.logs.dumpOnFailure(e.t, name)
	e.t.Cleanup(func() {
		if err := w.stop(); err != nil {
			e.t.Errorf("%s: run returned %v", name, err)
		}
	})
	w.addr = w.logs.waitAddr(e.t, name, w.done)
	waitReady(e.t, w.addr, 10*time.Second)
	return w
}

// stop cancels run's context and returns what run returned.
func (w *worker) stop() error {
	w.once.Do(func() {
		w.cancel()
		select {
		case w.err = <-w.done:
		case <-time.After(30 * time.Second):
			w.err = fmt.Errorf("%s did not stop within 30s", w.name)
		}
	})
	return w.err
}

// metric returns the value of one sample from /metrics, e.g.
// metric(t, `worker_messages_total{outcome="charged"}`); 0 when absent.
func (w *worker) metric(t testing.TB, sample string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + w.addr + "/metrics")
	if err != nil {
		t.Fatalf("%s metrics: %v", w.name, err)
	}
	defer resp.Body.Close()
	var v float64
	scanLines(resp.Body, func(line string) bool {
		if rest, ok := strings.CutPrefix(line, sample+" "); ok {
			v, _ = strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return false
		}
		return true
	})
	return v
}

// sum adds sample over workers.
func sum(t testing.TB, sample string, ws ...*worker) float64 {
	t.Helper()
	var total float64
	for _, w := range ws {
		total += w.metric(t, sample)
	}
	return total
}

func outcome(o string) string { return `worker_messages_total{outcome="` + o + `"}` }

// waitSettled waits until the workers have settled n deliveries as charged,
// declined or duplicate (the final outcomes of a valid message).
func waitSettled(t testing.TB, within time.Duration, n int, ws ...*worker) {
	t.Helper()
	eventually(t, within, func() string {
		var got float64
		for _, o := range []string{"charged", "declined", "duplicate"} {
			got += sum(t, outcome(o), ws...)
		}
		if got != float64(n) {
			return fmt.Sprintf("%v of %d copies settled", got, n)
		}
		return ""
	})
}
