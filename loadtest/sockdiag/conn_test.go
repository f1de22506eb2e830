package sockdiag

import "testing"

func TestServingClient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    Conn
		want bool
	}{
		{"request read, nothing sent yet", Conn{BytesReceived: 200, LastSend: 30, LastReceive: 2}, true},
		{"keep-alive, answered", Conn{BytesSent: 900, BytesReceived: 400, LastSend: 5, LastReceive: 9}, false},
		{"keep-alive, next request read", Conn{BytesSent: 900, BytesReceived: 600, LastSend: 50, LastReceive: 3}, true},
		{"same tick: undecided, not counted", Conn{BytesSent: 900, BytesReceived: 600, LastSend: 4, LastReceive: 4}, false},
		{"nothing received", Conn{LastSend: 7}, false},
	}
	for _, tt := range tests {
		if got := tt.c.ServingClient(); got != tt.want {
			t.Errorf("%s: ServingClient = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestWaitingForServer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    Conn
		want bool
	}{
		{"first request sent", Conn{BytesSent: 300, LastSend: 1, LastReceive: 20}, true},
		{"keep-alive, answered", Conn{BytesSent: 900, BytesReceived: 400, LastSend: 9, LastReceive: 5}, false},
		{"keep-alive, next request sent", Conn{BytesSent: 1200, BytesReceived: 400, LastSend: 2, LastReceive: 40}, true},
		{"same tick: undecided, not counted", Conn{BytesSent: 900, BytesReceived: 600, LastSend: 4, LastReceive: 4}, false},
		{"nothing sent", Conn{}, false},
	}
	for _, tt := range tests {
		if got := tt.c.WaitingForServer(); got != tt.want {
			t.Errorf("%s: WaitingForServer = %v, want %v", tt.name, got, tt.want)
		}
	}
}
