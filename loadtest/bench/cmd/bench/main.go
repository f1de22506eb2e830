// Command bench is `make bench`: oncepay's performance measurements, side by
// side in one run on one machine, and the report (docs/PERFORMANCE.md says
// what each number means).
//
//	bench            run every phase, write results.json, report.md and plots
//	bench report DIR render report.md and the plots of a finished run again
//
// It expects to run under `scripts/harness run` on its own harness instance
// (REDIS_URL, DATABASE_URL and AMQP_URL of that instance in the
// environment), from the repository root. The phases:
//
//	go   pkg/idem Go benchmarks, BENCH_GO_COUNT runs each, medians, benchstat
//	e2e  the api and workers with the boundary on and off: Redis round
//	     trips, fresh and replayed requests at saturation, latency at a
//	     fixed rate next to pkg/idem's own floor, and the highest sustained
//	     rate of each copy with its CPU per charged payment
//
// The peer phase (loadtest/bench/peer) has its own command; bench reads its
// results JSON (BENCH_PEER) when it exists and evaluates the peer targets.
//
// Every process it starts it stops again, by pid, also on Ctrl-C; every
// phase is bounded in time.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
