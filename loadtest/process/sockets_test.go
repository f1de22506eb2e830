package process

import "testing"

func TestServingClient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    conn
		want bool
	}{
		{"request read, nothing sent yet", conn{BytesReceived: 200, LastSend: 30, LastReceive: 2}, true},
		{"keep-alive, answered", conn{BytesSent: 900, BytesReceived: 400, LastSend: 5, LastReceive: 9}, false},
		{"keep-alive, next request read", conn{BytesSent: 900, BytesReceived: 600, LastSend: 50, LastReceive: 3}, true},
		{"same tick: undecided, not counted", conn{BytesSent: 900, BytesReceived: 600, LastSend: 4, LastReceive: 4}, false},
		{"nothing received", conn{LastSend: 7}, false},
	}
	for _, tt := range tests {
		if got := tt.c.servingClient(); got != tt.want {
			t.Errorf("%s: servingClient = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestWaitingForServer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    conn
		want bool
	}{
		{"first request sent", conn{BytesSent: 300, LastSend: 1, LastReceive: 20}, true},
		{"keep-alive, answered", conn{BytesSent: 900, BytesReceived: 400, LastSend: 9, LastReceive: 5}, false},
		{"keep-alive, next request sent", conn{BytesSent: 1200, BytesReceived: 400, LastSend: 2, LastReceive: 40}, true},
		{"same tick: undecided, not counted", conn{BytesSent: 900, BytesReceived: 600, LastSend: 4, LastReceive: 4}, false},
		{"nothing sent", conn{}, false},
	}
	for _, tt := range tests {
		if got := tt.c.waitingForServer(); got != tt.want {
			t.Errorf("%s: waitingForServer = %v, want %v", tt.name, got, tt.want)
		}
	}
}
