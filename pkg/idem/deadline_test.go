package idem

import (
	"testing"
	"time"
)

func TestDefaultMargin(t *testing.T) {
	for _, tc := range []struct{ lease, want time.Duration }{
		{30 * time.Second, 3 * time.Second},
		{15 * time.Second, 1500 * time.Millisecond},
		{time.Second, 100 * time.Millisecond}, // a tenth, at the floor
		{300 * time.Millisecond, 100 * time.Millisecond},
		{150 * time.Millisecond, 75 * time.Millisecond}, // the floor capped at half the lease
	} {
		if got := defaultMargin(tc.lease); got != tc.want {
			t.Errorf("defaultMargin(%s) = %s, want %s", tc.lease, got, tc.want)
		}
	}
}

func TestNewMargin(t *testing.T) {
	for _, tc := range []struct{ lease, margin, want time.Duration }{
		{time.Second, 0, 100 * time.Millisecond},
		{time.Second, 250 * time.Millisecond, 250 * time.Millisecond},
		{time.Second, time.Second, 100 * time.Millisecond}, // not shorter than the lease: default
		{0, 0, 3 * time.Second},                            // default lease 30s
	} {
		s := New(nil, Config{Lease: tc.lease, Margin: tc.margin})
		if got := s.cfg.Margin; got != tc.want {
			t.Errorf("New(Lease %s, Margin %s): margin %s, want %s", tc.lease, tc.margin, got, tc.want)
		}
	}
}

func TestLeaseDeadline(t *testing.T) {
	s := New(nil, Config{Lease: 10 * time.Second, Margin: 2 * time.Second})
	sent := time.Now()
	l := &Lease{store: s, sent: sent}
	if got, want := l.Deadline(), sent.Add(8*time.Second); !got.Equal(want) {
		t.Fatalf("Deadline() = %s after the send, want %s", got.Sub(sent), want.Sub(sent))
	}
}
