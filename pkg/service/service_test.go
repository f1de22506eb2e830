package service

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oncepay/oncepay/pkg/service/ops"
)

// events records what happened, in order, from any goroutine.
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, s)
}

func (e *events) get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.list)
}

// started is a Service running in the background.
type started struct {
	client, ops string // base URLs
	done        chan error
}

// start builds a Service with one client listener serving h, lets setup
// register more, and runs it until ctx ends.
func start(t *testing.T, ctx context.Context, cfg Config, h http.Handler, setup func(*Service)) started {
	t.Helper()
	cfg.OpsAddr = "127.0.0.1:0"
	svc, err := New(slog.New(slog.DiscardHandler), prometheus.NewRegistry(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := svc.Listen("addr", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Handler = h
	if setup != nil {
		setup(svc)
	}
	s := started{
		client: "http://" + svc.listeners[0].ln.Addr().String(),
		ops:    "http://" + svc.ops.ln.Addr().String(),
		done:   make(chan error, 1),
	}
	go func() { s.done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return")
		}
	})
	return s
}

// freeAddr returns a local address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func status(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func wait(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestShutdownOrder: on ctx's end /readyz turns 503 while the request in
// flight still finishes; then the tasks stop, then the OnStop funcs run
// last registered first, then the ops listener closes.
func TestShutdownOrder(t *testing.T) {
	t.Parallel()
	var ev events
	inFlight, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(inFlight)
			<-release
			ev.add("request answered")
		}
		_, _ = io.WriteString(w, "ok")
	})
	ctx, cancel := context.WithCancel(t.Context())
	s := start(t, ctx, Config{ShutdownGrace: 5 * time.Second}, h, func(svc *Service) {
		svc.Check(ops.Check{Name: "dep", Required: true, Fn: func(context.Context) error { return nil }})
		svc.Go("task", func(ctx context.Context) error {
			<-ctx.Done()
			ev.add("task stopped")
			return nil
		})
		svc.OnStop("first", func(context.Context) error { ev.add("first closed"); return nil })
		svc.OnStop("second", func(context.Context) error { ev.add("second closed"); return nil })
	})
	wait(t, "ready", func() bool { return status(s.ops+"/readyz") == http.StatusOK })

	answered := make(chan int, 1)
	go func() { answered <- status(s.client + "/slow") }()
	<-inFlight
	cancel()
	wait(t, "readyz 503", func() bool { return status(s.ops+"/readyz") == http.StatusServiceUnavailable })
	if got := status(s.ops + "/livez"); got != http.StatusOK {
		t.Errorf("livez while draining = %d, want 200", got)
	}
	ev.add("readyz 503")
	close(release)
	if got := <-answered; got != http.StatusOK {
		t.Errorf("in-flight request = %d, want 200", got)
	}
	if err := <-s.done; err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	s.done <- nil // for the cleanup
	want := []string{"readyz 503", "request answered", "task stopped", "second closed", "first closed"}
	if diff := cmp.Diff(want, ev.get()); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if got := status(s.ops + "/livez"); got != 0 {
		t.Errorf("ops listener still answers %d after Run returned", got)
	}
}

// TestShutdownDelayKeepsServing: for ShutdownDelay after the signal the
// client listener still answers while /readyz is 503.
func TestShutdownDelayKeepsServing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	s := start(t, ctx, Config{ShutdownGrace: 5 * time.Second, ShutdownDelay: 500 * time.Millisecond},
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }), nil)
	wait(t, "ready", func() bool { return status(s.ops+"/readyz") == http.StatusOK })
	cancel()
	wait(t, "readyz 503", func() bool { return status(s.ops+"/readyz") == http.StatusServiceUnavailable })
	if got := status(s.client + "/"); got != http.StatusOK {
		t.Errorf("client listener during the delay = %d, want 200", got)
	}
}

// TestGraceBoundsShutdown: a request stuck past ShutdownGrace has its
// connection closed, and Run returns just after the grace.
func TestGraceBoundsShutdown(t *testing.T) {
	t.Parallel()
	const grace = 300 * time.Millisecond
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	inFlight := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	s := start(t, ctx, Config{ShutdownGrace: grace}, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		close(inFlight)
		<-stuck
	}), nil)
	answered := make(chan int, 1)
	go func() { answered <- status(s.client + "/") }()
	<-inFlight
	began := time.Now()
	cancel()
	if err := <-s.done; err != nil {
		t.Errorf("Run = %v", err)
	}
	s.done <- nil
	if took := time.Since(began); took < grace || took > grace+time.Second {
		t.Errorf("Run returned %s after the signal, want just after the %s grace", took, grace)
	}
	if got := <-answered; got != 0 {
		t.Errorf("stuck request got %d, want its connection closed", got)
	}
}

// TestFailureStopsTheService: a task that returns before shutdown stops
// the service at once (no ShutdownDelay) and Run returns why.
func TestFailureStopsTheService(t *testing.T) {
	t.Parallel()
	lost := errors.New("connection lost for good")
	for name, tt := range map[string]struct {
		ret  error
		want string
	}{
		"error": {lost, "broker: connection lost for good"},
		"nil":   {nil, "broker stopped"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			began := time.Now()
			s := start(t, t.Context(), Config{ShutdownGrace: 5 * time.Second, ShutdownDelay: 5 * time.Second},
				http.NotFoundHandler(), func(svc *Service) {
					svc.Go("broker", func(context.Context) error { return tt.ret })
				})
			err := <-s.done
			s.done <- nil
			if err == nil || err.Error() != tt.want {
				t.Errorf("Run = %v, want %q", err, tt.want)
			}
			if tt.ret != nil && !errors.Is(err, lost) {
				t.Errorf("Run = %v, does not wrap the task's error", err)
			}
			if took := time.Since(began); took > 2*time.Second {
				t.Errorf("stopping took %s: the delay was not skipped", took)
			}
		})
	}
}

// TestOpsApartFromClients: the ops endpoints are on the ops listener only,
// and pprof is on neither unless PprofAddr is set, then on its own.
func TestOpsApartFromClients(t *testing.T) {
	t.Parallel()
	pprofAddr := freeAddr(t)
	s := start(t, t.Context(), Config{ShutdownGrace: time.Second, PprofAddr: pprofAddr, PprofEnv: "TEST_PPROF_ADDR"},
		http.NotFoundHandler(), nil)
	wait(t, "pprof", func() bool { return status("http://"+pprofAddr+"/debug/pprof/") == http.StatusOK })
	for _, path := range []string{"/livez", "/readyz", "/metrics", "/debug/pprof/"} {
		if got := status(s.client + path); got != http.StatusNotFound {
			t.Errorf("client listener %s = %d, want 404", path, got)
		}
	}
	if got := status(s.ops + "/debug/pprof/"); got != http.StatusNotFound {
		t.Errorf("ops listener /debug/pprof/ = %d, want 404", got)
	}
	if got := status(s.ops + "/metrics"); got != http.StatusOK {
		t.Errorf("ops listener /metrics = %d, want 200", got)
	}
}

// TestCloseBeforeRun: a start that fails before Run frees its ports and
// runs the OnStop funcs, last registered first; Run is refused a listener
// without a handler.
func TestCloseBeforeRun(t *testing.T) {
	t.Parallel()
	svc, err := New(slog.New(slog.DiscardHandler), prometheus.NewRegistry(), Config{OpsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Listen("addr", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	var ev events
	svc.OnStop("pool", func(context.Context) error { ev.add("pool"); return nil })
	svc.OnStop("redis", func(context.Context) error { ev.add("redis"); return errors.New("already closed") })
	if err := svc.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "no handler") {
		t.Errorf("Run without a handler = %v, want refused", err)
	}
	addr := svc.ops.ln.Addr().String()
	svc.Close()
	svc.Close()
	if diff := cmp.Diff([]string{"redis", "pool"}, ev.get()); diff != "" {
		t.Errorf("stops (-want +got):\n%s", diff)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Errorf("ops port still bound after Close: %v", err)
	} else {
		ln.Close()
	}
	if _, err := New(slog.New(slog.DiscardHandler), prometheus.NewRegistry(), Config{OpsAddr: "no-such-host-name.invalid:1"}); err == nil {
		t.Error("New on an address it cannot bind: nil error")
	}
}

func TestCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string // "" for an error
	}{
		{[]string{"psp"}, "serve"},
		{[]string{"psp", "serve"}, "serve"},
		{[]string{"psp", "migrate"}, "migrate"},
		{[]string{"psp", "charge-everyone"}, ""},
		{[]string{"psp", "migrate", "now"}, ""},
	}
	for _, tt := range tests {
		var stderr strings.Builder
		got, err := Command(tt.args, &stderr, "usage: psp [serve|migrate]", "serve", "migrate")
		if got != tt.want || (err != nil) != (tt.want == "") || (err != nil) != (stderr.Len() > 0) {
			t.Errorf("Command(%q) = %q, %v (stderr %q); want %q", tt.args, got, err, stderr.String(), tt.want)
		}
	}
}
