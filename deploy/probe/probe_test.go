package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status  int
		wantErr bool
	}{
		{http.StatusOK, false},
		{http.StatusNoContent, false},
		{http.StatusServiceUnavailable, true},
		{http.StatusNotFound, true},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(tt.status) }))
			t.Cleanup(srv.Close)
			var stderr bytes.Buffer
			err := run(context.Background(), []string{"probe", srv.URL + "/readyz"}, noEnv, io.Discard, &stderr)
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Errorf("run(%d) error = %v, want error: %v", tt.status, err, tt.wantErr)
			}
		})
	}
}

func TestCheckUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	if err := run(context.Background(), []string{"probe", url}, noEnv, io.Discard, io.Discard); err == nil {
		t.Fatal("run against a closed port: got nil error")
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"probe"}, noEnv, io.Discard, &stderr); err == nil {
		t.Fatal("run without a URL: got nil error")
	}
	if !strings.Contains(stderr.String(), "usage:") {
		t.Errorf("stderr = %q, want the usage text", stderr.String())
	}
}

// fakeAPI is the smallest api that honours the parts of the contract the
// smoke test checks. status is the payment status GET reports after the
// first poll.
func fakeAPI(t *testing.T, key, status string, replayHeader bool) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	bodies := map[string]string{}
	polls := 0
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/payments", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		k := r.Header.Get("Idempotency-Key")
		if b, ok := bodies[k]; ok {
			if replayHeader {
				w.Header().Set("Idempotent-Replayed", "true")
			}
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, b)
			return
		}
		b := `{"id":"pay_1","status":"pending","amount":1234,"currency":"EUR"}`
		bodies[k] = b
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, b)
	})
	mux.HandleFunc("GET /v1/payments/{id}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		polls++
		s := "pending"
		if polls > 1 {
			s = status
		}
		json.NewEncoder(w).Encode(payment{ID: r.PathValue("id"), Status: s, Amount: 1234, Currency: "EUR", PSPChargeID: "ch_1"})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestSmoke(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		status       string
		replayHeader bool
		envKey       string
		wantErr      string
	}{
		{name: "succeeds", status: "succeeded", replayHeader: true, envKey: "k1"},
		{name: "payment failed", status: "failed", replayHeader: true, envKey: "k1", wantErr: "failed"},
		{name: "no replay header", status: "succeeded", envKey: "k1", wantErr: "Idempotent-Replayed"},
		{name: "wrong key", status: "succeeded", replayHeader: true, envKey: "nope", wantErr: "want 202"},
		{name: "no key", status: "succeeded", replayHeader: true, wantErr: "PROBE_API_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := fakeAPI(t, "k1", tt.status, tt.replayHeader)
			getenv := func(k string) string {
				if k == "PROBE_API_KEY" {
					return tt.envKey
				}
				return ""
			}
			var stdout bytes.Buffer
			err := run(context.Background(), []string{"probe", "smoke", "-api", srv.URL, "-wait", "5s"}, getenv, &stdout, io.Discard)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("smoke: %v\nstdout:\n%s", err, stdout.String())
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("smoke error = %v, want one mentioning %q", err, tt.wantErr)
			}
			if tt.wantErr == "" && !strings.Contains(stdout.String(), "succeeded psp_charge_id=ch_1") {
				t.Errorf("stdout = %q, want the charge id", stdout.String())
			}
		})
	}
}

func noEnv(string) string { return "" }

func TestWait(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()

	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"probe", "wait", ln.Addr().String()}, noEnv, &stdout, io.Discard); err != nil {
		t.Fatalf("wait for a listening port: %v", err)
	}
	if !strings.Contains(stdout.String(), "is up") {
		t.Errorf("stdout = %q, want an 'is up' line", stdout.String())
	}
	err = run(context.Background(), []string{"probe", "wait", "-timeout", "300ms", "-interval", "50ms", closedAddr}, noEnv, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "not reachable") {
		t.Errorf("wait for a closed port: error = %v, want 'not reachable'", err)
	}
	if err := run(context.Background(), []string{"probe", "wait", "no-port"}, noEnv, io.Discard, io.Discard); err == nil {
		t.Error("wait for an address without a port: got nil error")
	}
}
