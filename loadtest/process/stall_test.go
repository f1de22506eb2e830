package process_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/oncepay/oncepay/loadtest/process"
)

// statusHarness writes a harness script whose status prints out.
func statusHarness(t *testing.T, out string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "harness")
	script := fmt.Sprintf("#!/bin/sh\n[ \"$1\" = status ] || exit 2\ncat <<'END'\n%sEND\n", out)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStallServiceStopsThenResumes: the service's pid, from harness status,
// is stopped while the stall lasts and running after it.
func TestStallServiceStopsThenResumes(t *testing.T) {
	t.Parallel()
	sleep := startSleep(t, t.TempDir())
	harness := statusHarness(t, fmt.Sprintf("postgres   running  pid 1        port 5432\nredis      running  pid %-8d port 6379\n", sleep.PID))
	b := process.New(process.Config{Harness: harness, HarnessEnv: []string{"PATH=" + os.Getenv("PATH")}})

	done := make(chan error, 1)
	go func() {
		pid, err := b.StallService(context.Background(), "redis", 300*time.Millisecond)
		if err == nil && pid != sleep.PID {
			err = fmt.Errorf("stalled pid %d, want %d", pid, sleep.PID)
		}
		done <- err
	}()
	deadline := time.Now().Add(2 * time.Second)
	for state(t, sleep.PID) != "T" {
		if time.Now().After(deadline) {
			t.Fatal("the stalled service never showed stopped")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := state(t, sleep.PID); s == "T" {
		t.Error("the service is still stopped after the stall")
	}
}

func TestStallServiceRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, status, service string
		notRunning            bool
	}{
		{"stopped", "redis      stopped  pid -        port 6379\n", "redis", true},
		{"no line", "postgres   running  pid 1        port 5432\n", "redis", true},
		{"not a service", "", "psp", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := process.New(process.Config{Harness: statusHarness(t, tt.status), HarnessEnv: []string{"PATH=" + os.Getenv("PATH")}})
			_, err := b.StallService(context.Background(), tt.service, time.Millisecond)
			if err == nil || errors.Is(err, process.ErrNotRunning) != tt.notRunning {
				t.Errorf("err = %v, want an error (ErrNotRunning: %v)", err, tt.notRunning)
			}
		})
	}
}
