package httpapi

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Checker checks one dependency; nil means healthy.
type Checker interface {
	Check(ctx context.Context) error
}

// CheckFunc adapts a function to Checker.
type CheckFunc func(ctx context.Context) error

// Check calls f.
func (f CheckFunc) Check(ctx context.Context) error { return f(ctx) }

// Dependency is one checked dependency of /readyz.
type Dependency struct {
	Name    string
	Checker Checker
	// Required dependencies make /readyz 503 when they fail. An optional one
	// is reported but does not take the instance out of service.
	Required bool
}

// Readiness answers /readyz: the dependencies' checks, run concurrently
// within a timeout, or 503 at once after Drain. It is safe for concurrent
// use.
type Readiness struct {
	deps     []Dependency
	timeout  time.Duration
	details  map[string]string
	draining atomic.Bool
}

// NewReadiness returns a Readiness over deps, each check bounded by timeout.
func NewReadiness(timeout time.Duration, deps ...Dependency) *Readiness {
	return &Readiness{deps: deps, timeout: timeout}
}

// WithDetails adds details to every /readyz answer (e.g. a demonstration
// idempotency strategy) and returns rd. Call it before serving; details
// must not change afterwards.
func (rd *Readiness) WithDetails(details map[string]string) *Readiness {
	rd.details = details
	return rd
}

// Drain makes /readyz answer 503 from now on, so that load balancers stop
// sending requests before the server stops accepting them.
func (rd *Readiness) Drain() { rd.draining.Store(true) }

type readyReport struct {
	Status  string                 `json:"status"` // ready, not_ready or draining
	Checks  map[string]checkReport `json:"checks,omitempty"`
	Details map[string]string      `json:"details,omitempty"`
}

type checkReport struct {
	Status   string `json:"status"` // up or down
	Required bool   `json:"required"`
	Error    string `json:"error,omitempty"`
}

func (rd *Readiness) report(ctx context.Context) (int, readyReport) {
	if rd.draining.Load() {
		return http.StatusServiceUnavailable, readyReport{Status: "draining", Details: rd.details}
	}
	ctx, cancel := context.WithTimeout(ctx, rd.timeout)
	defer cancel()
	rep := readyReport{Status: "ready", Checks: make(map[string]checkReport, len(rd.deps)), Details: rd.details}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, d := range rd.deps {
		wg.Go(func() {
			c := checkReport{Status: "up", Required: d.Required}
			if err := d.Checker.Check(ctx); err != nil {
				c.Status, c.Error = "down", err.Error()
			}
			mu.Lock()
			defer mu.Unlock()
			rep.Checks[d.Name] = c
			if c.Status == "down" && d.Required {
				rep.Status = "not_ready"
			}
		})
	}
	wg.Wait()
	if rep.Status != "ready" {
		return http.StatusServiceUnavailable, rep
	}
	return http.StatusOK, rep
}

// readyz handles GET /readyz.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	status, rep := s.ready.report(r.Context())
	writeJSON(w, status, rep)
}

// livez handles GET /livez: 200 while the process serves HTTP.
func (s *Server) livez(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, readyReport{Status: "alive"})
}
