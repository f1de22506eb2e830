// Package service is the one shape every oncepay service runs in: its HTTP
// listeners (with httpserver's timeouts), an ops listener of its own
// (/livez, /readyz, /metrics, see package ops), optional pprof, background
// tasks, and one graceful shutdown order.
//
// A main's run builds a Service with New (which binds the ops listener) and
// defers Close, binds its client listeners with Listen, then, as it dials
// its dependencies, registers each one's cleanup with OnStop, its readiness
// with Check and background work with Go, and calls Run. Binding comes
// first, so a taken port fails the start before anything is dialled; a
// start that fails later is cleaned up by Close.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oncepay/oncepay/pkg/service/httpserver"
	"github.com/oncepay/oncepay/pkg/service/ops"
	"github.com/oncepay/oncepay/pkg/service/pprofserve"
)

// Config is what every service sets the same way.
type Config struct {
	// OpsAddr is the ops listener's address (port 0 picks one); it must
	// never be a client listener's.
	OpsAddr string
	// PprofAddr, when set, serves net/http/pprof on a listener of its own;
	// PprofEnv names the variable that set it, for the warning.
	PprofAddr, PprofEnv string
	// ShutdownGrace bounds the whole shutdown, from the signal on.
	ShutdownGrace time.Duration
	// ShutdownDelay is how long the client listeners keep serving after
	// /readyz turns 503, so that load balancers stop routing first. Part of
	// the grace.
	ShutdownDelay time.Duration
}

// Service is one running service. Its methods other than Run and Close
// must be called before Run, from one goroutine.
type Service struct {
	cfg      Config
	log      *slog.Logger
	gatherer prometheus.Gatherer

	ops       listener
	listeners []listener
	checks    []ops.Check
	details   map[string]string
	tasks     []task
	stops     []stop
	draining  atomic.Bool
	ran       bool
}

type listener struct {
	name string
	ln   net.Listener
	srv  *http.Server
}

type task struct {
	name string
	fn   func(context.Context) error
}

type stop struct {
	name string
	fn   func(context.Context) error
}

// New binds cfg.OpsAddr and returns a Service whose /metrics exposes g. log
// receives the service's lifecycle lines and net/http's errors.
func New(log *slog.Logger, g prometheus.Gatherer, cfg Config) (*Service, error) {
	ln, err := net.Listen("tcp", cfg.OpsAddr)
	if err != nil {
		return nil, fmt.Errorf("listen (ops): %w", err)
	}
	return &Service{cfg: cfg, log: log, gatherer: g, ops: listener{name: "ops_addr", ln: ln}}, nil
}

// Listen binds addr now and returns the http.Server (httpserver's limits)
// that Run serves on it; set its Handler before Run. name is the
// listener's attribute in the "listening" log line: "addr" for the port
// clients use, else something like "admin_addr".
func (s *Service) Listen(name, addr string) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen (%s): %w", name, err)
	}
	srv := httpserver.New(nil, s.log)
	s.listeners = append(s.listeners, listener{name: name, ln: ln, srv: srv})
	return srv, nil
}

// Check registers a readiness check, reported by /readyz under c.Name.
func (s *Service) Check(c ops.Check) { s.checks = append(s.checks, c) }

// Details sets what /readyz adds to every answer (see ops.Deps.Details).
func (s *Service) Details(d map[string]string) { s.details = d }

// Go registers fn to run from Run on, in a goroutine of its own, until its
// context ends at shutdown (after the client listeners stopped); fn must
// return soon after. If fn returns before shutdown began, the service stops
// and Run returns the error (an error naming the task if fn returned nil).
func (s *Service) Go(name string, fn func(ctx context.Context) error) {
	s.tasks = append(s.tasks, task{name, fn})
}

// OnStop registers fn, the cleanup of what name is, to run at shutdown
// after every task returned, in the reverse order of registration (as
// defers run), each on a context that ends with the grace. Its error is
// logged.
func (s *Service) OnStop(name string, fn func(ctx context.Context) error) {
	s.stops = append(s.stops, stop{name, fn})
}

// Close is for a start that fails before Run: it closes every listener and
// runs the OnStop funcs. After Run it does nothing.
func (s *Service) Close() {
	if s.ran {
		return
	}
	s.ran = true
	s.closeListeners()
	s.stopAll(context.Background(), time.Time{})
}

func (s *Service) closeListeners() {
	_ = s.ops.ln.Close()
	for _, l := range s.listeners {
		_ = l.ln.Close()
	}
}

// stopAll runs the OnStop funcs in reverse order, each until deadline (if
// set).
func (s *Service) stopAll(ctx context.Context, deadline time.Time) {
	for i := len(s.stops) - 1; i >= 0; i-- {
		st := s.stops[i]
		s.within(deadline, st.name, func() {
			if err := st.fn(ctx); err != nil {
				s.log.Warn("stop", "what", st.name, "err", err)
			}
		})
	}
}

// Run serves every listener, starts pprof (if configured) and the tasks,
// and logs "listening" with each listener's address. It runs until ctx ends
// or a listener or task fails, then shuts down in this order, all within
// ShutdownGrace of that moment:
//
//  1. /readyz answers 503 "draining";
//  2. the client listeners keep serving for ShutdownDelay (not after a failure);
//  3. they stop accepting and drain the requests in flight (http.Server
//     Shutdown); connections still busy at the deadline are closed;
//  4. the tasks' context ends and Run waits for them;
//  5. the OnStop funcs run, last registered first;
//  6. the ops and pprof listeners close.
//
// Run returns nil after a clean shutdown on ctx, else the first failure (a
// task's error at shutdown included).
func (s *Service) Run(ctx context.Context) error {
	for _, l := range s.listeners {
		if l.srv.Handler == nil {
			return fmt.Errorf("listener %s has no handler", l.name)
		}
	}
	s.ran = true
	defer s.closeListeners()
	failed := make(chan error, len(s.listeners)+len(s.tasks)+1)
	opsSrv := httpserver.New(ops.NewHandler(ops.Deps{
		Log: s.log.With("component", "ops"), Checks: s.checks, Gatherer: s.gatherer,
		Draining: s.draining.Load, Details: s.details,
	}), s.log)
	serve := func(l listener, srv *http.Server) {
		if err := srv.Serve(l.ln); !errors.Is(err, http.ErrServerClosed) {
			failed <- fmt.Errorf("serve %s: %w", l.name, err)
		}
	}
	go serve(s.ops, opsSrv)
	defer opsSrv.Close()
	addrs := []any{}
	for _, l := range s.listeners {
		go serve(l, l.srv)
		addrs = append(addrs, l.name, l.ln.Addr().String())
	}
	addrs = append(addrs, s.ops.name, s.ops.ln.Addr().String())
	if s.cfg.PprofAddr != "" {
		pctx, stopPprof := context.WithCancel(context.WithoutCancel(ctx))
		defer stopPprof()
		go pprofserve.Serve(pctx, s.cfg.PprofAddr, s.cfg.PprofEnv, s.log)
	}
	s.log.Info("listening", addrs...)

	var stopping atomic.Bool
	taskCtx, stopTasks := context.WithCancel(context.WithoutCancel(ctx))
	defer stopTasks()
	done := make([]chan struct{}, len(s.tasks))
	for i, t := range s.tasks {
		done[i] = make(chan struct{})
		go func() {
			defer close(done[i])
			err := t.fn(taskCtx)
			switch {
			case stopping.Load():
				if err != nil {
					failed <- fmt.Errorf("%s: %w", t.name, err)
				}
			case err == nil:
				failed <- fmt.Errorf("%s stopped", t.name)
			default:
				failed <- fmt.Errorf("%s: %w", t.name, err)
			}
		}()
	}

	var failure error
	select {
	case <-ctx.Done():
		s.log.Info("shutdown signal received")
	case failure = <-failed:
		s.log.Error("stopping", "err", failure)
	}
	deadline := time.Now().Add(s.cfg.ShutdownGrace)
	s.draining.Store(true)
	s.log.Info("draining: readiness now answers 503", "grace", s.cfg.ShutdownGrace.String(), "delay", s.cfg.ShutdownDelay.String())
	if failure == nil && s.cfg.ShutdownDelay > 0 {
		time.Sleep(s.cfg.ShutdownDelay)
	}
	sctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	for _, l := range s.listeners {
		if err := l.srv.Shutdown(sctx); err != nil {
			s.log.Warn("grace period over: closing connections of unfinished requests", "listener", l.name, "err", err)
			_ = l.srv.Close()
		}
	}
	s.log.Info("http server stopped")
	stopping.Store(true)
	stopTasks()
	for i, t := range s.tasks {
		s.within(deadline, t.name, func() { <-done[i] })
	}
	if failure == nil {
		select {
		case failure = <-failed:
		default:
		}
	}
	s.stopAll(sctx, deadline)
	s.log.Info("stopped", "err", failure)
	return failure
}

// within runs fn and waits for it until deadline, logging if it gives up
// (fn then goes on in the background; the process is about to exit).
func (s *Service) within(deadline time.Time, what string, fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	if deadline.IsZero() {
		<-done
		return
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("grace period over: not waiting any longer", "for", what)
	}
}
