// Package fault plans and injects the faults of oncepay's fault test: it
// computes the schedule the k6 "faults" scenario follows, carries each fault
// out through a Backend (local processes today; containers and pods later),
// waits first until a replica really has work in flight, and logs every fault
// as a JSON line.
//
// The driver is served over HTTP (NewServer) by loadtest/cmd/faultd, so the
// load generator decides when, and the driver knows how.
package fault
