// Package verify checks oncepay's invariants (ARCHITECTURE §5 in the design
// notes; docs/demo.md lists them) after a load test.
//
// It works in three steps, each usable on its own:
//
//   - Drain waits, bounded, until every payment of the run is terminal and
//     the outbox and queues are empty;
//   - Collect reads the run's state from Postgres, the psp ledger, Redis and
//     RabbitMQ into a Snapshot, beside what the client saw (package record)
//     and the fault log (package fault);
//   - Check is a pure function from a Snapshot to a Report that lists every
//     violation with the ids involved.
//
// A run is identified by its run id: every idempotency key the k6 scripts
// send starts with "<run id>-", so the verifier looks only at the run's own
// payments, charges and boundary records.
package verify
