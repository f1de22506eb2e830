package process

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Reading TCP state through the kernel's sock_diag netlink interface (what
// ss uses) takes about a millisecond, so the kill follows the look closely.

const (
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
	inetDiagInfo     = 2  // INET_DIAG_INFO attribute: struct tcp_info
	tcpEstablished   = 1
	inetDiagReqLen   = 56 // struct inet_diag_req_v2
	inetDiagMsgLen   = 72 // struct inet_diag_msg
)

// established returns every established TCP connection (IPv4 and IPv6)
// with its inode and tcp_info counters.
func established() ([]conn, error) {
	var out []conn
	for _, family := range []uint8{syscall.AF_INET, syscall.AF_INET6} {
		cs, err := dump(family)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

func dump(family uint8) ([]conn, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_INET_DIAG)
	if err != nil {
		return nil, fmt.Errorf("sock_diag socket: %w", err)
	}
	defer syscall.Close(fd)

	// nlmsghdr + inet_diag_req_v2{family, protocol, ext, pad, states, id}
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

	var out []conn
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

// parseDiag reads one inet_diag_msg and its INET_DIAG_INFO attribute.
func parseDiag(b []byte) (conn, bool) {
	if len(b) < inetDiagMsgLen {
		return conn{}, false
	}
	c := conn{
		Local: int(binary.BigEndian.Uint16(b[4:])),
		Peer:  int(binary.BigEndian.Uint16(b[6:])),
		Inode: binary.NativeEndian.Uint32(b[68:]),
	}
	for attrs := b[inetDiagMsgLen:]; len(attrs) >= 4; {
		l := int(binary.NativeEndian.Uint16(attrs[0:]))
		t := binary.NativeEndian.Uint16(attrs[2:])
		if l < 4 || l > len(attrs) {
			break
		}
		if t == inetDiagInfo {
			info := attrs[4:l]
			// offsets in struct tcp_info (linux/tcp.h)
			if len(info) >= 56 {
				c.LastSend = int64(binary.NativeEndian.Uint32(info[44:]))
				c.LastReceive = int64(binary.NativeEndian.Uint32(info[52:]))
			}
			if len(info) >= 136 {
				c.BytesReceived = int64(binary.NativeEndian.Uint64(info[128:]))
			}
			if len(info) >= 208 {
				c.BytesSent = int64(binary.NativeEndian.Uint64(info[200:]))
			}
		}
		attrs = attrs[(l+3)&^3:]
		if len(attrs) < 4 {
			break
		}
	}
	return c, true
}

// socketInodes returns the inodes of pid's sockets (from /proc/pid/fd).
func socketInodes(pid int) (map[uint32]bool, error) {
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
		n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]"), 10, 32)
		if err == nil {
			out[uint32(n)] = true
		}
	}
	return out, nil
}
