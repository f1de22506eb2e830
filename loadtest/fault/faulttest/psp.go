// Package faulttest fakes what the fault driver drives, for tests of the
// driver and its backends. It is test rig: product code must not import
// it.
package faulttest

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// PSPConfig is what a fake psp admin API starts with.
type PSPConfig struct {
	// Token, if set, is the bearer token every request must carry; a
	// request without it is answered 401. Empty: any token is accepted.
	Token string
	// Knobs are what GET /admin/config answers at first; each PUT's
	// fields are written over them.
	Knobs map[string]any
	// ReadOnly are fields GET reports that a PUT must not name (the psp's
	// reject_until): such a PUT is answered 400 and changes nothing.
	ReadOnly []string
}

// PSPAdmin is a fake of the psp's admin API (GET and PUT /admin/config,
// docs/psp.md) that records every accepted PUT's body. It is safe for
// concurrent use.
type PSPAdmin struct {
	// URL is the fake's base URL, for fault.PSPAdmin.URL.
	URL string

	cfg   PSPConfig
	mu    sync.Mutex
	knobs map[string]any
	puts  []map[string]any
}

// NewPSPAdmin starts a fake psp admin API on a loopback port, closed at
// t's cleanup.
func NewPSPAdmin(t testing.TB, cfg PSPConfig) *PSPAdmin {
	t.Helper()
	p := &PSPAdmin{cfg: cfg, knobs: maps.Clone(cfg.Knobs)}
	if p.knobs == nil {
		p.knobs = map[string]any{}
	}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// Puts returns the bodies of the PUTs accepted so far, in order.
func (p *PSPAdmin) Puts() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.puts)
}

// Knobs returns the configuration in force.
func (p *PSPAdmin) Knobs() map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.knobs)
}

func (p *PSPAdmin) serve(w http.ResponseWriter, r *http.Request) {
	if p.cfg.Token != "" && r.Header.Get("Authorization") != "Bearer "+p.cfg.Token {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.Method == http.MethodPut {
		var patch map[string]any
		if err := json.NewDecoder(r.Body).Decode(&patch); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, f := range p.cfg.ReadOnly {
			if _, ok := patch[f]; ok {
				http.Error(w, `{"errors":[{"field":"`+f+`","detail":"is not a known field"}]}`, http.StatusBadRequest)
				return
			}
		}
		p.puts = append(p.puts, patch)
		maps.Copy(p.knobs, patch)
	}
	_ = json.NewEncoder(w).Encode(p.knobs)
}
