// Package compare turns the verifier's reports of one fault experiment,
// run once per idempotency strategy, into one table and one chart: double
// charges, payments lost, mismatched replays, stuck records, accepted
// payments per second and p99 latency. It re-implements no check; every
// count comes from verify.Report, the client's records or the leftover
// markers of the naive strategies. cmd/compare runs the experiment (make
// compare); docs/compare.md shows a recorded run.
//
// A strategy without a violation in its run is "not caught this run",
// never "safe": one run samples the failure windows, it does not cover them.
package compare
