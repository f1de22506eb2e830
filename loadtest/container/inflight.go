package container

import (
	"github.com/oncepay/oncepay/loadtest/process"
	"github.com/oncepay/oncepay/loadtest/sockdiag"
)

// inFlight counts the work in flight of the process pid, which plays replica
// r (see sockdiag.InFlight); the ports are the ones inside the container, and
// the look enters the container's network namespace.
func inFlight(pid int, r process.Replica) (n int, evidence string, err error) {
	return sockdiag.InFlight(pid, r.ServerPort, r.UpstreamPort)
}
