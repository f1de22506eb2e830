// Command bench is `make bench`: oncepay's performance measurements, side by
// side in one run on one machine, and the report; docs/PERFORMANCE.md says
// what each number means and which variables it reads.
//
//	bench            run every phase, write results.json, report.md and plots
//	bench report DIR render report.md and the plots of a finished run again
//
// It runs from the repository root under `scripts/harness run` on its own
// harness instance. Its phases are go (the pkg/idem Go benchmarks) and e2e
// (the pipeline with the boundary on and off); it reads the peer phase's
// results (loadtest/bench/peer) when they exist. Every process it starts it
// stops again, by pid, also on Ctrl-C; every phase is bounded in time.
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
