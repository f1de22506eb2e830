package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

func TestReadyz(t *testing.T) {
	t.Parallel()
	up := func(context.Context) error { return nil }
	down := func(context.Context) error {
		return errors.New("dial tcp 10.0.0.7:6379: connect: connection refused (user oncepay)")
	}
	tests := []struct {
		name     string
		checks   []Check
		draining bool
		details  map[string]string
		status   int
		want     Report
	}{
		{"all up", []Check{{"redis", true, up}, {"rabbitmq", false, up}}, false, nil, 200,
			Report{Status: "ready", Checks: map[string]CheckReport{"redis": {"up", true}, "rabbitmq": {"up", false}}}},
		{"required down", []Check{{"redis", true, down}, {"rabbitmq", false, up}}, false, nil, 503,
			Report{Status: "not_ready", Checks: map[string]CheckReport{"redis": {"down", true}, "rabbitmq": {"up", false}}}},
		{"optional down", []Check{{"redis", true, up}, {"rabbitmq", false, down}}, false, nil, 200,
			Report{Status: "ready", Checks: map[string]CheckReport{"redis": {"up", true}, "rabbitmq": {"down", false}}}},
		{"draining", []Check{{"redis", true, up}}, true, nil, 503, Report{Status: "draining"}},
		{"details", []Check{{"redis", true, up}}, false, map[string]string{"idempotency_strategy": "api-only"}, 200,
			Report{Status: "ready", Checks: map[string]CheckReport{"redis": {"up", true}}, Details: map[string]string{"idempotency_strategy": "api-only"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			h := NewHandler(Deps{Log: slog.New(slog.NewTextHandler(&logs, nil)), Checks: tt.checks,
				Gatherer: prometheus.NewRegistry(), Draining: func() bool { return tt.draining }, Details: tt.details})
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			if rec.Code != tt.status {
				t.Errorf("status = %d, want %d", rec.Code, tt.status)
			}
			if strings.Contains(rec.Body.String(), "10.0.0.7") {
				t.Errorf("answer carries the dependency's error: %s", rec.Body)
			}
			var got Report
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if wantLog := strings.Contains(tt.name, "down"); wantLog != strings.Contains(logs.String(), "10.0.0.7") {
				t.Errorf("log %q: want the error logged: %v", logs.String(), wantLog)
			}
		})
	}
}

func TestLivezMetricsAndUnknownPaths(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "test_total", Help: "t"}))
	h := NewHandler(Deps{Log: slog.New(slog.DiscardHandler), Gatherer: reg, Draining: func() bool { return true }})
	for _, tt := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/livez", 200, `"alive"`},
		{"GET", "/metrics", 200, "test_total 0"},
		{"GET", "/v1/payments", 404, ""},
		{"GET", "/debug/pprof/", 404, ""},
		{"POST", "/metrics", 405, ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
		if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.body) {
			t.Errorf("%s %s = %d %q, want %d containing %q", tt.method, tt.path, rec.Code, rec.Body.String(), tt.status, tt.body)
		}
	}
}
