package pprofserve_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncepay/oncepay/pkg/service/pprofserve"
)

// records is a slog.Handler that keeps every record, for the tests to read.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}

// find returns the first record whose message contains msg and the value of
// its attribute key.
func (r *records) find(msg, key string) (slog.Record, string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.recs {
		if !strings.Contains(rec.Message, msg) {
			continue
		}
		var v string
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == key {
				v = a.Value.String()
				return false
			}
			return true
		})
		return rec, v, true
	}
	return slog.Record{}, "", false
}

func TestServe(t *testing.T) {
	t.Parallel()
	logs := &records{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pprofserve.Serve(ctx, "127.0.0.1:0", "TEST_PPROF_ADDR", slog.New(logs))
	}()

	var addr string
	for deadline := time.Now().Add(5 * time.Second); addr == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Serve logged no address within 5s")
		}
		rec, a, ok := logs.find("pprof enabled", "addr")
		if ok {
			if rec.Level != slog.LevelWarn || !strings.Contains(rec.Message, "TEST_PPROF_ADDR") {
				t.Errorf("log = %s %q, want a warning naming TEST_PPROF_ADDR", rec.Level, rec.Message)
			}
			addr = a
		}
	}

	resp, err := http.Get("http://" + addr + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine") {
		t.Errorf("GET /debug/pprof/ = %d %.80q, want 200 and the profile index", resp.StatusCode, body)
	}

	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return within 5s of ctx ending")
	}
	if _, err := http.Get("http://" + addr + "/debug/pprof/"); err == nil {
		t.Error("GET after ctx ended succeeded, want the listener closed")
	}
}

func TestServeBadAddress(t *testing.T) {
	t.Parallel()
	logs := &records{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		pprofserve.Serve(t.Context(), "127.0.0.1:notaport", "TEST_PPROF_ADDR", slog.New(logs))
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return on an address it cannot listen on")
	}
	rec, addr, ok := logs.find("pprof: listen", "addr")
	if !ok || rec.Level != slog.LevelWarn || addr != "127.0.0.1:notaport" {
		t.Errorf("log = %v %s %q addr=%q, want a warning pprof: listen naming the address", ok, rec.Level, rec.Message, addr)
	}
}
