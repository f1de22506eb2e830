// Package sockdiag reads TCP connection state from the kernel's sock_diag
// netlink interface (what ss uses), about a millisecond per look, so that the
// fault driver can tell whether a replica really has a request in flight
// right before it kills it.
package sockdiag

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// Conn is one established TCP connection as the kernel reports it.
type Conn struct {
	Local, Peer   int    // ports
	Inode         uint32 // of the socket, to find its process
	BytesSent     int64  // tcp_info bytes_sent
	BytesReceived int64  // tcp_info bytes_received
	// LastSend and LastReceive are the milliseconds since data was last
	// sent and received (0 = just now).
	LastSend, LastReceive int64
}

// WaitingForServer: a client connection sent a request and got no answer
// yet (HTTP/1.1 carries one request at a time per connection).
func (c Conn) WaitingForServer() bool {
	return c.BytesSent > 0 && (c.BytesReceived == 0 || c.LastSend < c.LastReceive)
}

// ServingClient: a server connection received a request and has not
// answered it yet.
func (c Conn) ServingClient() bool {
	return c.BytesReceived > 0 && (c.BytesSent == 0 || c.LastReceive < c.LastSend)
}

// Established returns the established TCP connections of the network
// namespace pid lives in. It enters that namespace on a locked OS thread
// that is never unlocked, so the thread ends with its goroutine and no other
// goroutine ever runs in the foreign namespace. Needs CAP_SYS_ADMIN.
func Established(pid int) ([]Conn, error) {
	type result struct {
		conns []Conn
		err   error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		theirs := fmt.Sprintf("/proc/%d/ns/net", pid)
		if !sameNetns("/proc/self/ns/net", theirs) {
			f, err := os.Open(theirs)
			if err != nil {
				ch <- result{err: err}
				return
			}
			defer f.Close()
			if _, _, errno := syscall.RawSyscall(sysSetns, f.Fd(), syscall.CLONE_NEWNET, 0); errno != 0 {
				ch <- result{err: fmt.Errorf("setns into the network namespace of pid %d: %w (the driver must run as root)", pid, errno)}
				return
			}
		}
		var out []Conn
		for _, family := range []uint8{syscall.AF_INET, syscall.AF_INET6} {
			cs, err := dump(family)
			if err != nil {
				ch <- result{err: err}
				return
			}
			out = append(out, cs...)
		}
		ch <- result{conns: out}
	}()
	r := <-ch
	return r.conns, r.err
}

// sameNetns reports whether two /proc/.../ns/net links name one namespace
// (then no setns, and no privilege, is needed).
func sameNetns(a, b string) bool {
	x, err1 := os.Readlink(a)
	y, err2 := os.Readlink(b)
	return err1 == nil && err2 == nil && x == y
}

const (
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
	inetDiagInfo     = 2  // INET_DIAG_INFO: struct tcp_info
	tcpEstablished   = 1
	inetDiagReqLen   = 56 // struct inet_diag_req_v2
	inetDiagMsgLen   = 72 // struct inet_diag_msg
)

// dump asks the kernel for every established TCP socket of one family.
func dump(family uint8) ([]Conn, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_INET_DIAG)
	if err != nil {
		return nil, fmt.Errorf("sock_diag socket: %w", err)
	}
	defer syscall.Close(fd)
	req := make([]byte, syscall.NLMSG_HDRLEN+inetDiagReqLen)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], sockDiagByFamily)
	binary.NativeEndian.PutUint16(req[6:], syscall.NLM_F_REQUEST|syscall.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(req[8:], 1)
	b := req[syscall.NLMSG_HDRLEN:]
	b[0], b[1], b[2] = family, syscall.IPPROTO_TCP, 1<<(inetDiagInfo-1)
	binary.NativeEndian.PutUint32(b[4:], 1<<tcpEstablished)
	if err := syscall.Sendto(fd, req, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("sock_diag send: %w", err)
	}
	var out []Conn
	buf := make([]byte, 64*1024)
	for {
		n, _, err := syscall.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, fmt.Errorf("sock_diag receive: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, fmt.Errorf("sock_diag parse: %w", err)
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case syscall.NLMSG_DONE:
				return out, nil
			case syscall.NLMSG_ERROR:
				return nil, fmt.Errorf("sock_diag: kernel error %d", int32(binary.NativeEndian.Uint32(m.Data)))
			}
			if c, ok := parseDiag(m.Data); ok {
				out = append(out, c)
			}
		}
	}
}

// parseDiag reads one inet_diag_msg and its struct tcp_info (linux/tcp.h offsets).
func parseDiag(b []byte) (Conn, bool) {
	if len(b) < inetDiagMsgLen {
		return Conn{}, false
	}
	c := Conn{
		Local: int(binary.BigEndian.Uint16(b[4:])),
		Peer:  int(binary.BigEndian.Uint16(b[6:])),
		Inode: binary.NativeEndian.Uint32(b[68:]),
	}
	for attrs := b[inetDiagMsgLen:]; len(attrs) >= 4; {
		l := int(binary.NativeEndian.Uint16(attrs[0:]))
		if l < 4 || l > len(attrs) {
			break
		}
		if binary.NativeEndian.Uint16(attrs[2:]) == inetDiagInfo {
			info := attrs[4:l]
			if len(info) >= 56 {
				c.LastSend = int64(binary.NativeEndian.Uint32(info[44:]))    // tcpi_last_data_sent
				c.LastReceive = int64(binary.NativeEndian.Uint32(info[52:])) // tcpi_last_data_recv
			}
			if len(info) >= 136 {
				c.BytesReceived = int64(binary.NativeEndian.Uint64(info[128:])) // tcpi_bytes_received
			}
			if len(info) >= 208 {
				c.BytesSent = int64(binary.NativeEndian.Uint64(info[200:])) // tcpi_bytes_sent
			}
		}
		if next := (l + 3) &^ 3; next < len(attrs) {
			attrs = attrs[next:]
		} else {
			break
		}
	}
	return c, true
}

// SocketInodes returns the inodes of pid's sockets (from /proc/pid/fd).
func SocketInodes(pid int) (map[uint32]bool, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[uint32]bool{}
	for _, e := range entries {
		target, err := os.Readlink(dir + "/" + e.Name())
		if err != nil || !strings.HasPrefix(target, "socket:[") {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]"), 10, 32); err == nil {
			out[uint32(n)] = true
		}
	}
	return out, nil
}

// InFlight counts the work in flight of the process pid: with serverPort,
// its client connections on that port whose request was received and not
// yet answered (an HTTP server); with upstreamPort, its connections to that
// port with a request sent and no answer yet (a client of that service).
// Both rely on HTTP/1.1 carrying one request at a time per connection;
// connections whose last send and last receive fall in the same kernel tick
// are not counted. The ports are the ones in pid's network namespace.
func InFlight(pid, serverPort, upstreamPort int) (n int, evidence string, err error) {
	mine, err := SocketInodes(pid)
	if err != nil {
		return 0, "", fmt.Errorf("sockets of pid %d: %w", pid, err)
	}
	conns, err := Established(pid)
	if err != nil {
		return 0, "", err
	}
	open := 0
	for _, c := range conns {
		if !mine[c.Inode] {
			continue
		}
		switch {
		case serverPort != 0 && c.Local == serverPort:
			open++
			if c.ServingClient() {
				n++
			}
		case upstreamPort != 0 && c.Peer == upstreamPort:
			open++
			if c.WaitingForServer() {
				n++
			}
		}
	}
	if serverPort != 0 {
		return n, fmt.Sprintf("pid %d: %d of %d client connections on :%d had a request unanswered", pid, n, open, serverPort), nil
	}
	return n, fmt.Sprintf("pid %d: %d of %d connections to :%d waited for an answer", pid, n, open, upstreamPort), nil
}
