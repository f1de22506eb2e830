package container

import (
	"fmt"

	"github.com/oncepay/oncepay/loadtest/process"
)

// inFlight counts the work in flight of the process pid, which plays replica
// r: with r.ServerPort, client connections on that port whose request was
// received and not yet answered (the api); with r.UpstreamPort, its
// connections to that port with a request sent and no answer yet (the worker
// calling the psp). The ports are the ones inside the container.
func inFlight(pid int, r process.Replica) (n int, evidence string, err error) {
	mine, err := socketInodes(pid)
	if err != nil {
		return 0, "", fmt.Errorf("sockets of pid %d: %w", pid, err)
	}
	conns, err := establishedIn(pid)
	if err != nil {
		return 0, "", err
	}
	open := 0
	for _, c := range conns {
		if !mine[c.Inode] {
			continue
		}
		switch {
		case r.ServerPort != 0 && c.Local == r.ServerPort:
			open++
			if c.servingClient() {
				n++
			}
		case r.UpstreamPort != 0 && c.Peer == r.UpstreamPort:
			open++
			if c.waitingForServer() {
				n++
			}
		}
	}
	if r.ServerPort != 0 {
		return n, fmt.Sprintf("pid %d: %d of %d client connections on :%d had a request unanswered", pid, n, open, r.ServerPort), nil
	}
	return n, fmt.Sprintf("pid %d: %d of %d connections to :%d waited for an answer", pid, n, open, r.UpstreamPort), nil
}
