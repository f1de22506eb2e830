package process

// conn is one established TCP connection as the kernel reports it.
type conn struct {
	Local, Peer   int    // ports
	Inode         uint32 // of the socket, to find its process
	BytesSent     int64
	BytesReceived int64
	// LastSend and LastReceive are the milliseconds since data was last
	// sent and received (kernel tcp_info; 0 = just now).
	LastSend, LastReceive int64
}

// waitingForServer reports whether a client connection has sent a request
// and got no answer yet: one request at a time per HTTP/1.1 connection, so
// the last data moved on it was sent, not received.
func (c conn) waitingForServer() bool {
	return c.BytesSent > 0 && (c.BytesReceived == 0 || c.LastSend < c.LastReceive)
}

// servingClient reports whether a server connection has received a request
// and not answered it yet.
func (c conn) servingClient() bool {
	return c.BytesReceived > 0 && (c.BytesSent == 0 || c.LastReceive < c.LastSend)
}
