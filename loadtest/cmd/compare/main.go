// Command compare runs one fault experiment against every idempotency
// strategy and prints one table: the same k6 load and fault schedule (same
// seed, rate, duration, kills, restarts and FLUSHALL), plus the same psp
// fault (a share of charges whose answer is lost), against oncepay and each
// comparison strategy of package naive, on the local runtime. Between runs
// it restarts the api and the workers with IDEM_STRATEGY=<strategy> and
// resets the state: Redis flushed, payments, outbox and charge_takeovers
// truncated, the queues purged, the psp ledger emptied.
//
// Two more rows, patroni-sync and patroni-async (package compare's
// Postgres rows), run oncepay itself on the ha topology, Postgres under
// Patroni with synchronous or asynchronous replication, under one fault: a
// lagged Postgres failover. Before each, and before the first strategy
// after one, the runtime is stopped and its Patroni state deleted, so that
// each cluster is bootstrapped with its own replication.
//
// Each run is loadtest/run chaos (a Postgres row's: loadtest/run matrix
// restricted to its fault kind), judged by the invariant verifier; the
// table is built from its report.json (package compare). Everything goes
// to -out (default .run/compare): one directory per strategy with the run's
// files, compare.json, compare.md, compare.txt and compare.png.
//
// Usage (make compare sets the flags from COMPARE_* variables):
//
//	compare [-strategies oncepay,get-then-set,...] [-duration 60s] [-rate 30] [-seed 1]
//	        [-drain 60s] [-kill-every 6s] [-psp-fail-after 0.01] [-out .run/compare] [-report-only]
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "compare: %v\n", err)
		os.Exit(1)
	}
}
