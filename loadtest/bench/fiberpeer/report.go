package main

import (
	"fmt"
	"slices"
	"strings"
)

// median of the values f takes on samples.
func median[T any](samples []T, f func(T) float64) float64 {
	if len(samples) == 0 {
		return 0
	}
	v := make([]float64, len(samples))
	for i, s := range samples {
		v[i] = f(s)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// markdown renders the medians as tables.
func (r *results) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s: %d rounds of %s windows per variant and concurrency, interleaved; %d CPUs, %s; 1-minute load average %.2f at the start, %.2f at the end.\n\n",
		r.Started.Format("2006-01-02 15:04 UTC"), r.Rounds, r.Window, r.CPUs, r.GoVersion, r.LoadAvg[0], r.LoadAvg[1])
	for _, c := range concurrencies {
		fmt.Fprintf(&b, "Concurrency %d (medians):\n\n", c)
		b.WriteString("| server | requests/s | server CPU µs/request | Redis CPU µs/request | p50 latency µs | non-201 |\n|---|---:|---:|---:|---:|---:|\n")
		for _, v := range r.Variants {
			s := v.Samples[c]
			errs := 0
			for _, x := range s {
				errs += x.Errors
			}
			fmt.Fprintf(&b, "| %s | %.0f | %.1f | %.1f | %.0f | %d |\n", v.Name,
				median(s, func(x sample) float64 { return x.PerSecond }),
				median(s, func(x sample) float64 { return x.ServerCPUus }),
				median(s, func(x sample) float64 { return x.RedisCPUus }),
				median(s, func(x sample) float64 { return x.LatencyP50us }), errs)
		}
		b.WriteString("\n")
	}
	b.WriteString("Memory per key (new keys, 16 clients):\n\n| server | server heap B/key | Redis used_memory B/key | Redis keys/request | MEMORY USAGE of one key |\n|---|---:|---:|---:|---:|\n")
	for _, v := range r.Variants {
		m := v.Memory
		if m.RedisKeysPerKey == 0 && m.KeyUsage == 0 {
			fmt.Fprintf(&b, "| %s | %.0f | – | – | – |\n", v.Name, m.HeapPerKey)
			continue
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.2f | %d |\n", v.Name, m.HeapPerKey, m.RedisPerKey, m.RedisKeysPerKey, m.KeyUsage)
	}
	if r.Go != nil {
		b.WriteString("\n" + r.Go.markdown())
	}
	return b.String()
}
