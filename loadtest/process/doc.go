// Package process is the fault driver's backend for the local runtime
// (scripts/local): every replica is a process under a supervisor loop that
// writes its pid to <run dir>/<replica>/child.pid and starts a new one when
// it dies; Redis and RabbitMQ are the harness's (scripts/harness).
//
// A pid is signalled only after /proc shows it is still the expected
// program working in the replica's directory, so a stale pid file is
// harmless. Work in flight is read from the kernel's TCP state (sock_diag, what ss
// -tin shows): see Backend.InFlight.
package process
