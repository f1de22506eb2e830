package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   []float64
		want float64
	}{
		{in: nil, want: 0},
		{in: []float64{3}, want: 3},
		{in: []float64{5, 1, 3}, want: 3},
		{in: []float64{4, 1, 3, 2}, want: 2.5},
	}
	for _, tt := range tests {
		if got := median(tt.in, func(v float64) float64 { return v }); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestProcCPUCountsThisProcess(t *testing.T) {
	t.Parallel()
	before, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Work until the count grows (a clock tick is 10ms of CPU; the
	// machine may be busy): a count that never moves is the failure.
	after := before
	for end := time.Now().Add(10 * time.Second); after <= before && time.Now().Before(end); {
		for spin := time.Now().Add(20 * time.Millisecond); time.Now().Before(spin); {
		}
		if after, err = procCPU(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	if after <= before {
		t.Errorf("procCPU stayed at %v over 10s of work, want it to grow", before)
	}
}

func TestGoLineParsesTheBenchmark(t *testing.T) {
	t.Parallel()
	out := "BenchmarkMiddleware/mode=middleware/callers=64-2   	   10850	    353808 ns/op	     42217 cpu-ns/op	    7424 B/op	      98 allocs/op\n"
	m := goLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no match in %q", out)
	}
	if got := strings.Join(m[1:], " "); got != "middleware 64 353808 42217 7424 98" {
		t.Errorf("fields %q", got)
	}
}
