package fault_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/fault"
)

// fakeNetwork records what it was asked to inject and undo.
type fakeNetwork struct {
	mu     sync.Mutex
	calls  []string
	undone chan string
}

func newFakeNetwork() *fakeNetwork { return &fakeNetwork{undone: make(chan string, 8)} }

func (n *fakeNetwork) Inject(_ context.Context, kind, target string, d time.Duration) (func() error, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, fmt.Sprintf("%s %s %s", kind, target, d))
	return func() error {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.calls = append(n.calls, "undo "+target)
		n.undone <- target
		return nil
	}, nil
}

func (n *fakeNetwork) Calls() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.calls...)
}

func networkDriver(t *testing.T, n fault.Network, p fault.Prober) (*fault.Driver, *fault.EventLog, *fakeBackend) {
	t.Helper()
	b := &fakeBackend{}
	events := fault.NewEventLog(io.Discard)
	d := fault.NewDriver(b, p, events, slog.New(slog.NewTextHandler(io.Discard, nil)), fault.DriverConfig{
		WaitInFlight: time.Second, Poll: time.Millisecond, Network: n,
		APIs: []string{"api-1", "api-2"}, Workers: []string{"worker-1", "worker-2"},
	})
	t.Cleanup(func() { d.Close() })
	return d, events, b
}

// A network fault waits for work in flight on the replica whose path it
// hits, injects the toxics of its kind, holds them for its duration and
// undoes them; the replica's other faults (kill, freeze) are not used.
func TestNetworkFaultLandsOnTheReplicaAndIsUndone(t *testing.T) {
	t.Parallel()
	tests := []struct {
		step     fault.Step
		busy     string // the replica with work in flight
		wantCall string
	}{
		{fault.Step{Kind: "latency-redis", Action: fault.ActionLatency, Target: "api-2.redis", ForMS: 30}, "api-2", "latency api-2.redis 2s"},
		{fault.Step{Kind: "partition-redis", Action: fault.ActionPartition, Target: "worker-1.redis", ForMS: 30}, "worker-1", "partition worker-1.redis 0s"},
		{fault.Step{Kind: "reset-psp", Action: fault.ActionResetPeer, Target: "worker-2.psp", ForMS: 30}, "worker-2", "reset_peer worker-2.psp 0s"},
		{fault.Step{Kind: "slow-postgres", Action: fault.ActionSlow, Target: "worker-1.postgres", ForMS: 30, DelayMS: 120}, "worker-1", "slow worker-1.postgres 120ms"},
	}
	for _, tt := range tests {
		t.Run(tt.step.Kind, func(t *testing.T) {
			t.Parallel()
			n := newFakeNetwork()
			p := &scriptProber{busy: func(look int, r string) int { return map[bool]int{true: 2}[r == tt.busy && look >= 3] }}
			d, events, b := networkDriver(t, n, p)
			e, err := d.Apply(context.Background(), tt.step)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tt.wantCall, "undo " + tt.step.Target}, n.Calls()); diff != "" {
				t.Errorf("network calls (-want +got):\n%s", diff)
			}
			if len(b.calls) != 0 {
				t.Errorf("backend calls %v, want none", b.calls)
			}
			if !e.Landed() || e.InFlight != 2 || e.TookMS < 30 || e.Target != tt.step.Target {
				t.Errorf("event %+v: want landed with 2 in flight on %s, held >= 30ms", e, tt.busy)
			}
			if got := events.Events(); len(got) != 1 || got[0].Kind != tt.step.Kind {
				t.Errorf("logged %+v, want one event of kind %s", got, tt.step.Kind)
			}
		})
	}
}

// Close (faultd stopping) undoes a network fault before its duration ends,
// and the Apply holding it returns.
func TestCloseUndoesNetworkFaultsInForce(t *testing.T) {
	t.Parallel()
	n := newFakeNetwork()
	d, _, _ := networkDriver(t, n, &scriptProber{busy: func(int, string) int { return 1 }})
	done := make(chan error, 1)
	go func() {
		_, err := d.Apply(context.Background(), fault.Step{Kind: "partition-redis", Action: fault.ActionPartition, Target: "worker-2.redis", ForMS: time.Hour.Milliseconds()})
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(n.Calls()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the partition was never injected")
		}
		time.Sleep(time.Millisecond)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case got := <-n.undone:
		if got != "worker-2.redis" {
			t.Errorf("undid %s, want worker-2.redis", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not undo the partition")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Apply: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Apply still holds the partition after Close")
	}
	if diff := cmp.Diff([]string{"partition worker-2.redis 0s", "undo worker-2.redis"}, n.Calls()); diff != "" {
		t.Errorf("network calls, want one undo (-want +got):\n%s", diff)
	}
}

func TestNetworkFaultRefusals(t *testing.T) {
	t.Parallel()
	busy := &scriptProber{busy: func(int, string) int { return 1 }}
	// no network (compose, kind, or no TOXIPROXY_URL): unsupported, unlogged
	d, events, _ := networkDriver(t, nil, busy)
	if _, err := d.Apply(context.Background(), fault.Step{Kind: "reset-psp", Action: fault.ActionResetPeer, Target: "worker-1.psp", ForMS: 10}); !errors.Is(err, fault.ErrUnsupported) {
		t.Errorf("without a network: err = %v, want ErrUnsupported", err)
	}
	if n := len(events.Events()); n != 0 {
		t.Errorf("without a network: %d events, want none", n)
	}
	// a target that is no replica's path, no duration, no delay: failed, logged
	for _, s := range []fault.Step{
		{Action: fault.ActionPartition, Target: "redis", ForMS: 10},
		{Action: fault.ActionPartition, Target: "worker-1", ForMS: 10},
		{Action: fault.ActionPartition, Target: "worker-1.redis"},
		{Action: fault.ActionLatency, Target: "worker-1.redis", ForMS: 10}, // no kind, so no delay
	} {
		n := newFakeNetwork()
		d, events, _ := networkDriver(t, n, busy)
		e, err := d.Apply(context.Background(), s)
		if err == nil || e.Error == "" || len(events.Events()) != 1 {
			t.Errorf("%s %s for %dms: err %v, event %+v; want a logged failure", s.Action, s.Target, s.ForMS, err, e)
		}
		if calls := n.Calls(); len(calls) != 0 {
			t.Errorf("%s %s: network calls %v, want none", s.Action, s.Target, calls)
		}
	}
}
