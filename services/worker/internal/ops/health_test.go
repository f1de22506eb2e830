package ops

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

func TestReadyz(t *testing.T) {
	ok := func(context.Context) error { return nil }
	down := func(context.Context) error { return errors.New("connection refused") }
	tests := []struct {
		name     string
		checks   []Check
		draining bool
		details  map[string]string
		status   int
		want     readiness
	}{
		{"all up", []Check{{"redis", ok}, {"amqp", ok}}, false, nil, 200,
			readiness{Status: "ok", Checks: map[string]string{"redis": "ok", "amqp": "ok"}}},
		{"one down", []Check{{"redis", down}, {"amqp", ok}}, false, nil, 503,
			readiness{Status: "unavailable", Checks: map[string]string{"redis": "down", "amqp": "ok"}}},
		{"draining", []Check{{"redis", ok}}, true, nil, 503,
			readiness{Status: "draining", Checks: map[string]string{"redis": "ok"}}},
		{"details", []Check{{"redis", ok}}, false, map[string]string{"idempotency_strategy": "api-only"}, 200,
			readiness{Status: "ok", Checks: map[string]string{"redis": "ok"}, Details: map[string]string{"idempotency_strategy": "api-only"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := NewServer(Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Checks: tt.checks,
				Gatherer: prometheus.NewRegistry(), Draining: func() bool { return tt.draining }, Details: tt.details})
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			if rec.Code != tt.status {
				t.Errorf("status = %d, want %d", rec.Code, tt.status)
			}
			var got readiness
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLivezAndMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_total", Help: "t"})
	reg.MustRegister(c)
	h := NewServer(Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Gatherer: reg, Draining: func() bool { return true }})
	for path, want := range map[string]string{"/livez": `"ok"`, "/metrics": "test_total 0"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("%s = %d %q, want 200 containing %q", path, rec.Code, rec.Body.String(), want)
		}
	}
}
