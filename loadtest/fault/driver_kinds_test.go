package fault_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/fault"
)

// scriptProber answers look n (from 1) with busy(n, replica) work units.
type scriptProber struct {
	mu    sync.Mutex
	looks int
	busy  func(n int, replica string) int
}

func (p *scriptProber) InFlight(_ context.Context, replica string) (int, string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.looks++
	if n := p.busy(p.looks, replica); n > 0 {
		return n, "busy", nil
	}
	return 0, "idle", nil
}

func kindsDriver(b fault.Backend, p fault.Prober, wait time.Duration) (*fault.Driver, *fault.EventLog) {
	events := fault.NewEventLog(io.Discard)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return fault.NewDriver(b, p, events, log, fault.DriverConfig{
		WaitInFlight: wait, Poll: time.Millisecond,
		APIs: []string{"api-1", "api-2"}, Workers: []string{"worker-1", "worker-2"},
	}), events
}

// A request answered between the driver's look and its kill was not cut
// off: the driver must not count the kill as mid-request (the client saw
// no cut-off for it). Here every look at the running replica shows work,
// every look at the frozen one shows none.
func TestKillCountsOnlyWorkSeenFrozen(t *testing.T) {
	t.Parallel()
	b := &fakeBackend{}
	p := &scriptProber{busy: func(int, string) int {
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.calls) > 0 && b.calls[len(b.calls)-1] == "freeze api-1" {
			return 0 // answered before the freeze
		}
		return 1
	}}
	d, _ := kindsDriver(b, p, 30*time.Millisecond)
	e, err := d.Do(context.Background(), fault.ActionKill, "api-1")
	if err != nil {
		t.Fatal(err)
	}
	if e.MidRequest == nil || *e.MidRequest || e.Frozen {
		t.Errorf("MidRequest = %v, Frozen = %v; want false, false: no request was in flight in the frozen replica", e.MidRequest, e.Frozen)
	}
	if last := b.calls[len(b.calls)-1]; last != "kill api-1" {
		t.Errorf("last backend call %q, want the kill", last)
	}
	for i, c := range b.calls[:len(b.calls)-1] {
		if want := map[bool]string{true: "freeze api-1", false: "thaw 4242"}[i%2 == 0]; c != want {
			t.Fatalf("backend call %d = %q, want %q (every freeze thawed before the next look): %v", i, c, want, b.calls)
		}
	}
}

func TestPauseHoldsTheFrozenReplica(t *testing.T) {
	t.Parallel()
	b := &fakeBackend{}
	d, _ := kindsDriver(b, &scriptProber{busy: func(n int, _ string) int { return map[bool]int{true: 1}[n >= 3] }}, time.Second)
	e, err := d.Apply(context.Background(), fault.Step{Kind: "pause-worker", Action: fault.ActionPause, Target: "worker-1", ForMS: 40})
	if err != nil {
		t.Fatal(err)
	}
	if e.MidRequest == nil || !*e.MidRequest || !e.Frozen || e.PID != 4242 || e.TookMS < 40 {
		t.Errorf("event %+v: want mid-request, frozen, pid 4242, took >= 40ms", e)
	}
	if diff := cmp.Diff([]string{"freeze worker-1", "thaw 4242"}, b.calls); diff != "" {
		t.Errorf("backend calls (-want +got):\n%s", diff)
	}
}

func TestServiceFaultAimsAtReplicas(t *testing.T) {
	t.Parallel()
	tests := []struct {
		step     fault.Step
		busy     string // the replica with work in flight
		wantCall string
		wantHit  string
	}{
		{fault.Step{Kind: "kill-postgres", Action: fault.ActionKill, Target: "postgres"}, "worker-2", "crash postgres", "worker-2"},
		{fault.Step{Kind: "delete-queue", Action: fault.ActionDeleteQueue, Target: "rabbitmq"}, "api-2", "delete-queue payments.charge", "api-2"},
		{fault.Step{Kind: "psp-outage", Action: fault.ActionOutage, Target: "psp", ForMS: 5000}, "worker-1", "outage 5s", "worker-1"},
		{fault.Step{Kind: "stall-redis", Action: fault.ActionStall, Target: "redis", ForMS: 2000}, "api-1", "stall redis 2s", "api-1"},
		{fault.Step{Kind: "reject-psp", Action: fault.ActionReject, Target: "psp", ForMS: 15000}, "worker-2", "reject 0.30 15s", "worker-2"},
		// delete-queue aims at the apis: a busy worker is not what it waits for
		{fault.Step{Kind: "delete-queue", Action: fault.ActionDeleteQueue, Target: "rabbitmq"}, "worker-1", "delete-queue payments.charge", ""},
	}
	for _, tt := range tests {
		b := &fakeBackend{}
		d, _ := kindsDriver(b, &scriptProber{busy: func(_ int, r string) int { return map[bool]int{true: 3}[r == tt.busy] }}, 20*time.Millisecond)
		e, err := d.Apply(context.Background(), tt.step)
		if err != nil {
			t.Fatalf("%s: %v", tt.step.Kind, err)
		}
		if diff := cmp.Diff([]string{tt.wantCall}, b.calls); diff != "" {
			t.Errorf("%s: backend calls (-want +got):\n%s", tt.step.Kind, diff)
		}
		if e.Hit != tt.wantHit || e.Landed() != (tt.wantHit != "") {
			t.Errorf("%s busy on %s: hit %q, landed %v; want %q, %v", tt.step.Kind, tt.busy, e.Hit, e.Landed(), tt.wantHit, tt.wantHit != "")
		}
	}
}

func TestUnsupportedFaultIsRefusedUnlogged(t *testing.T) {
	t.Parallel()
	for _, s := range []fault.Step{
		{Action: fault.ActionPause, Target: "worker-1", ForMS: 10},
		{Action: fault.ActionKill, Target: "postgres"},
		{Action: fault.ActionDeleteQueue, Target: "rabbitmq"},
		{Action: fault.ActionOutage, Target: "psp", ForMS: 10},
		{Action: fault.ActionStall, Target: "redis", ForMS: 10},
		{Action: fault.ActionReject, Target: "psp", ForMS: 10},
	} {
		f := &fakeBackend{}
		d, events := kindsDriver(plainBackend{f}, &scriptProber{busy: func(int, string) int { return 1 }}, time.Millisecond)
		if _, err := d.Apply(context.Background(), s); !errors.Is(err, fault.ErrUnsupported) {
			t.Errorf("%s %s: err = %v, want ErrUnsupported", s.Action, s.Target, err)
		}
		if n := len(events.Events()); n != 0 || len(f.calls) != 0 {
			t.Errorf("%s %s: %d events, calls %v; want none", s.Action, s.Target, n, f.calls)
		}
	}
}

// Without a Freezer (compose, kind) a kill trusts its look, as before.
func TestKillWithoutFreezerTrustsTheLook(t *testing.T) {
	t.Parallel()
	f := &fakeBackend{}
	d, _ := kindsDriver(plainBackend{f}, &scriptProber{busy: func(int, string) int { return 1 }}, time.Second)
	e, err := d.Do(context.Background(), fault.ActionKill, "api-2")
	if err != nil {
		t.Fatal(err)
	}
	if e.MidRequest == nil || !*e.MidRequest || e.Frozen {
		t.Errorf("MidRequest %v, Frozen %v: want true, false", e.MidRequest, e.Frozen)
	}
	if diff := cmp.Diff([]string{"kill api-2"}, f.calls); diff != "" {
		t.Errorf("backend calls (-want +got):\n%s", diff)
	}
}
