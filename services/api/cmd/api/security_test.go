package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TestRandomMethodsAndPathsKeepMetricsBounded: 10,000 requests with made-up
// methods and paths, sent before any authentication, add no more than a
// handful of metric series, and the api's heap does not grow with them.
func TestRandomMethodsAndPathsKeepMetricsBounded(t *testing.T) {
	a := startAPI(t, apiOptions{env: map[string]string{"LOG_LEVEL": "info"}})
	const requests = 10_000
	// warm up: every fixed label value these requests can produce, once
	a.sendRandom(t, rand.New(rand.NewPCG(1, 1)), 200)
	a.logs.forget()
	seriesBefore, heapBefore := a.seriesCount(t), heapInUse()

	a.sendRandom(t, rand.New(rand.NewPCG(2, 2)), requests)
	a.logs.forget()
	seriesAfter, heapAfter := a.seriesCount(t), heapInUse()
	if grown := seriesAfter - seriesBefore; grown > 20 {
		t.Errorf("%d requests with random methods and paths added %d metric series (%d -> %d), want at most 20",
			requests, grown, seriesBefore, seriesAfter)
	}
	// generous: the series of 10,000 distinct methods alone take ~6 MiB
	const heapBound = 3 << 20
	if grown := int64(heapAfter) - int64(heapBefore); grown > heapBound {
		t.Errorf("heap grew by %d KiB over %d requests, want under %d KiB", grown>>10, requests, heapBound>>10)
	}
	t.Logf("series %d -> %d, heap %d KiB -> %d KiB", seriesBefore, seriesAfter, heapBefore>>10, heapAfter>>10)
}

// sendRandom sends n requests with random token methods (3-12 letters,
// some of them real methods) and random paths, on 8 connections.
func (a *api) sendRandom(t *testing.T, rng *rand.Rand, n int) {
	t.Helper()
	reqs := make([]*http.Request, n)
	for i := range reqs {
		method := randomToken(rng, 3+rng.IntN(10))
		if rng.IntN(4) == 0 {
			method = []string{"GET", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"}[rng.IntN(6)]
		}
		path := "/" + randomToken(rng, 1+rng.IntN(20))
		if rng.IntN(3) == 0 {
			path = "/v1/payments/" + randomToken(rng, 8)
		}
		req, err := http.NewRequest(method, a.base+strings.ToLower(path), nil)
		if err != nil {
			t.Fatal(err)
		}
		reqs[i] = req
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				resp, err := client.Do(reqs[i])
				if err != nil {
					errs <- err
					return
				}
				resp.Body.Close()
				if resp.StatusCode >= 500 {
					errs <- fmt.Errorf("%s %s: %d", reqs[i].Method, reqs[i].URL.Path, resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func randomToken(rng *rand.Rand, n int) string {
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[rng.IntN(len(letters))]
	}
	return string(b)
}

// seriesCount is the number of samples /metrics exposes.
func (a *api) seriesCount(t *testing.T) int {
	t.Helper()
	r := a.do(t, http.MethodGet, "/metrics", nil, nil)
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			n++
		}
	}
	return n
}

// forget drops the lines kept so far (they are in the test's heap, which
// is the api's).
func (s *logSink) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf, s.lines = bytes.Buffer{}, nil
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
