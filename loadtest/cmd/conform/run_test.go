package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestRunUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no url", []string{"-body", "{{vary}}"}, "URL"},
		{"no placeholder", []string{"-url", "http://127.0.0.1:1/x", "-body", "{}"}, "{{vary}}"},
		{"bad header", []string{"-url", "http://127.0.0.1:1/x", "-body", "{{vary}}", "-H", "nocolon"}, "Name: value"},
		{"two effect readers", []string{"-url", "http://127.0.0.1:1/x", "-body", "{{vary}}", "-effects-url", "http://x/{key}", "-effects-cmd", "echo 1"}, "not both"},
		{"effects-pg without its query", []string{"-url", "http://127.0.0.1:1/x", "-body", "{{vary}}", "-effects-pg", "postgres://x"}, "go together"},
		{"fault times without command", []string{"-url", "http://127.0.0.1:1/x", "-body", "{{vary}}", "-fault-at", "1s"}, "fault command"},
		{"stray argument", []string{"-url", "http://127.0.0.1:1/x", "-body", "{{vary}}", "extra"}, "unexpected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			got := run(context.Background(), append([]string{"conform"}, tt.args...), &out, &errOut)
			if got != exitUsage {
				t.Errorf("exit %d, want %d; stderr:\n%s", got, exitUsage, errOut.String())
			}
			if !strings.Contains(errOut.String(), tt.want) {
				t.Errorf("stderr %q does not name %q", errOut.String(), tt.want)
			}
		})
	}
}

// echoCreate is a minimal idempotent create: correct (409 while in flight,
// replays, 422, problem+json) unless broken, which replays a new id.
func echoCreate(broken bool) http.Handler {
	var (
		mu   sync.Mutex
		seen = map[string][2]string{}
		n    int
	)
	problem := func(w http.ResponseWriter, status int) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"status":%d}`, status)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusOK)
			return
		}
		k := strings.Trim(r.Header.Get("Idempotency-Key"), `"`)
		if k == "" || len(k) > 255 || strings.ContainsFunc(k, func(c rune) bool { return c < 0x21 || c > 0x7e }) || len(r.Header.Values("Idempotency-Key")) > 1 {
			problem(w, http.StatusBadRequest)
			return
		}
		var body bytes.Buffer
		body.ReadFrom(r.Body)
		k = r.Header.Get("Authorization") + "|" + k
		mu.Lock()
		defer mu.Unlock()
		if old, ok := seen[k]; ok {
			if old[0] != body.String() {
				problem(w, http.StatusUnprocessableEntity)
				return
			}
			w.Header().Set("Idempotent-Replayed", "true")
			if broken {
				n++
				old[1] = fmt.Sprintf(`{"id":%d}`, n)
			}
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, old[1])
			return
		}
		n++
		seen[k] = [2]string{body.String(), fmt.Sprintf(`{"id":%d}`, n)}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, seen[k][1])
	})
}

func TestRunExitCodesAndReports(t *testing.T) {
	tests := []struct {
		name   string
		broken bool
		want   int
	}{
		{"passes", false, exitOK},
		{"fails", true, exitFail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(echoCreate(tt.broken))
			t.Cleanup(srv.Close)
			dir := t.TempDir()
			var out, errOut bytes.Buffer
			got := run(context.Background(), []string{"conform", "-url", srv.URL, "-H", "Authorization: Bearer a", "-H2", "Authorization: Bearer b",
				"-body", `{"v":"{{vary}}"}`, "-replay-headers", "Content-Type", "-storm-keys", "8", "-out", dir}, &out, &errOut)
			if got != tt.want {
				t.Errorf("exit %d, want %d\n%s\n%s", got, tt.want, out.String(), errOut.String())
			}
			if !strings.Contains(errOut.String(), "conform: matrix 1/") {
				t.Errorf("no progress line on stderr:\n%s", errOut.String())
			}
			for _, f := range []string{"report.json", "junit.xml", "report.html"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Error(err)
				}
			}
			_, err := os.Stat(filepath.Join(dir, "history.html"))
			if hist := err == nil; hist != tt.broken {
				t.Errorf("history.html written: %v, want %v", hist, tt.broken)
			}
		})
	}
}
