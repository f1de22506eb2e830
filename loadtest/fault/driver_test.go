package fault_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/oncepay/oncepay/loadtest/fault"
)

// fakeBackend records what it was asked to do.
type fakeBackend struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (b *fakeBackend) record(s string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, s)
	return b.err
}

func (b *fakeBackend) KillReplica(_ context.Context, r string) (int, error) {
	return 4242, b.record("kill " + r)
}
func (b *fakeBackend) RestartService(_ context.Context, s string) error {
	return b.record("restart " + s)
}
func (b *fakeBackend) FlushRedis(context.Context) error { return b.record("flush") }

func (b *fakeBackend) KillService(_ context.Context, s string) error { return b.record("crash " + s) }

func (b *fakeBackend) Freeze(_ context.Context, r string) (int, error) {
	return 4242, b.record("freeze " + r)
}

func (b *fakeBackend) Thaw(pid int) error { return b.record(fmt.Sprintf("thaw %d", pid)) }

func (b *fakeBackend) DeleteQueue(_ context.Context, q string) (int, error) {
	return 3, b.record("delete-queue " + q)
}

func (b *fakeBackend) PSPOutage(_ context.Context, d time.Duration) error {
	return b.record(fmt.Sprintf("outage %s", d))
}

func (b *fakeBackend) StallService(_ context.Context, s string, d time.Duration) (int, error) {
	return 4343, b.record(fmt.Sprintf("stall %s %s", s, d))
}

func (b *fakeBackend) PSPReject(_ context.Context, share float64, d time.Duration) error {
	return b.record(fmt.Sprintf("reject %.2f %s", share, d))
}

// plainBackend is a Backend with none of the optional interfaces.
type plainBackend struct{ f *fakeBackend }

func (b plainBackend) KillReplica(ctx context.Context, r string) (int, error) {
	return b.f.KillReplica(ctx, r)
}
func (b plainBackend) RestartService(ctx context.Context, s string) error {
	return b.f.RestartService(ctx, s)
}
func (b plainBackend) FlushRedis(ctx context.Context) error { return b.f.FlushRedis(ctx) }

// fakeProber reports work in flight from the n-th look on (never if n < 0).
type fakeProber struct {
	mu     sync.Mutex
	looks  int
	busyAt int
}

func (p *fakeProber) InFlight(context.Context, string) (int, string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.looks++
	if p.busyAt >= 0 && p.looks >= p.busyAt {
		return 2, "2 open client connections", nil
	}
	return 0, "idle", nil
}

func newDriver(t *testing.T, b fault.Backend, p fault.Prober, wait time.Duration) (*fault.Driver, *fault.EventLog, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	events := fault.NewEventLog(&buf)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return fault.NewDriver(b, p, events, log, fault.DriverConfig{WaitInFlight: wait, Poll: time.Millisecond}), events, &buf
}

func TestKillWaitsForWorkInFlight(t *testing.T) {
	t.Parallel()
	b, p := &fakeBackend{}, &fakeProber{busyAt: 5}
	d, _, _ := newDriver(t, b, p, 2*time.Second)
	e, err := d.Do(context.Background(), fault.ActionKill, "api-1")
	if err != nil {
		t.Fatal(err)
	}
	if p.looks != 6 {
		t.Errorf("prober looked %d times, want 6 (until busy, and once more frozen)", p.looks)
	}
	want := fault.Event{Seq: 1, Kind: "kill-api", Action: fault.ActionKill, Target: "api-1", PID: 4242, MidRequest: new(true), InFlight: 2, Evidence: "2 open client connections", Frozen: true}
	if diff := cmp.Diff(want, e, cmpopts.IgnoreFields(fault.Event{}, "Time", "WaitedMS", "TookMS")); diff != "" {
		t.Errorf("event (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"freeze api-1", "kill api-1"}, b.calls); diff != "" {
		t.Errorf("backend calls (-want +got):\n%s", diff)
	}
}

func TestKillGivesUpWaitingAndKillsAnyway(t *testing.T) {
	t.Parallel()
	b := &fakeBackend{}
	d, _, _ := newDriver(t, b, &fakeProber{busyAt: -1}, 30*time.Millisecond)
	start := time.Now()
	e, err := d.Do(context.Background(), fault.ActionKill, "worker-2")
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 30*time.Millisecond || took > time.Second {
		t.Errorf("Do took %s, want about the 30ms wait", took)
	}
	if e.MidRequest == nil || *e.MidRequest {
		t.Errorf("MidRequest = %v, want false", e.MidRequest)
	}
	if e.WaitedMS < 30 {
		t.Errorf("WaitedMS = %d, want >= 30", e.WaitedMS)
	}
	if diff := cmp.Diff([]string{"kill worker-2"}, b.calls); diff != "" {
		t.Errorf("backend calls (-want +got):\n%s", diff)
	}
}

func TestFailedFaultIsLogged(t *testing.T) {
	t.Parallel()
	b := &fakeBackend{err: errors.New("harness: rabbitmq did not start")}
	d, events, buf := newDriver(t, b, &fakeProber{}, time.Millisecond)
	_, err := d.Do(context.Background(), fault.ActionRestart, "rabbitmq")
	if err == nil {
		t.Fatal("Do succeeded, want the backend's error")
	}
	got := events.Events()
	if len(got) != 1 || got[0].Error != "harness: rabbitmq did not start" {
		t.Errorf("events = %+v, want one with the error", got)
	}
	if !strings.Contains(buf.String(), `"error":"harness: rabbitmq did not start"`) {
		t.Errorf("log line %q lacks the error", buf.String())
	}
}

func TestEventLogRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "faults.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	log := fault.NewEventLog(f)
	at := time.Date(2025, 11, 21, 8, 0, 0, 0, time.UTC)
	want := []fault.Event{
		{Seq: 1, Time: at, Action: fault.ActionKill, Target: "api-1", PID: 7, MidRequest: new(true), InFlight: 3, Evidence: "x", WaitedMS: 12, TookMS: 1},
		{Seq: 2, Time: at.Add(time.Second), Action: fault.ActionFlush, Target: "redis", TookMS: 4},
	}
	for _, e := range want {
		e.Seq = 0
		if _, err := log.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	got, err := fault.ReadEvents(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadEvents (-want +got):\n%s", diff)
	}
	if none, err := fault.ReadEvents(filepath.Join(t.TempDir(), "missing")); err != nil || none != nil {
		t.Errorf("ReadEvents(missing) = %v, %v; want nil, nil", none, err)
	}
}

func TestServer(t *testing.T) {
	t.Parallel()
	b := &fakeBackend{}
	d, events, _ := newDriver(t, b, &fakeProber{busyAt: 1}, time.Second)
	srv := httptest.NewServer(fault.NewServer(fault.ServerDeps{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Driver: d, Events: events,
		APIs: []string{"api-1", "api-2"}, Workers: []string{"worker-1", "worker-2"},
	}))
	t.Cleanup(srv.Close)

	res, err := http.Get(srv.URL + "/v1/schedule?duration=60s&seed=1")
	if err != nil {
		t.Fatal(err)
	}
	var plan struct{ Steps []fault.Step }
	if err := json.NewDecoder(res.Body).Decode(&plan); err != nil || res.StatusCode != 200 {
		t.Fatalf("GET /v1/schedule: %d, %v", res.StatusCode, err)
	}
	res.Body.Close()
	want, _ := fault.Plan(fault.PlanConfig{Duration: time.Minute, APIs: []string{"api-1", "api-2"}, Workers: []string{"worker-1", "worker-2"}, Seed: 1})
	if diff := cmp.Diff(want, plan.Steps); diff != "" {
		t.Errorf("GET /v1/schedule (-want +got):\n%s", diff)
	}

	for _, tt := range []struct {
		body string
		want int
	}{
		{`{"action":"kill","target":"api-2"}`, 200},
		{`{"action":"flush","target":"redis"}`, 200},
		{`{"action":"explode","target":"redis"}`, 400},
		{`{"action":"kill"}`, 400},
		{`{"action":"flush","target":"postgres"}`, 500},
	} {
		res, err := http.Post(srv.URL+"/v1/faults", "application/json", strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tt.want {
			t.Errorf("POST /v1/faults %s: status %d, want %d", tt.body, res.StatusCode, tt.want)
		}
	}
	if diff := cmp.Diff([]string{"freeze api-2", "kill api-2", "flush"}, b.calls); diff != "" {
		t.Errorf("backend calls (-want +got):\n%s", diff)
	}
	if n := len(events.Events()); n != 3 {
		t.Errorf("%d events logged, want 3 (two faults and the refused flush)", n)
	}
}
