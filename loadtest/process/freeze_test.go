package process_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncepay/oncepay/loadtest/process"
)

// state returns the one-letter process state of pid from /proc (R, S, T, ...).
func state(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	return s[strings.LastIndexByte(s, ')')+2:][:1]
}

func TestFreezeThawAndKillWhileFrozen(t *testing.T) {
	t.Parallel()
	run := t.TempDir()
	cmd := startSleep(t, filepath.Join(run, "worker-1"))
	writePID(t, filepath.Join(run, "worker-1"), cmd.PID)
	b := process.New(process.Config{RunDir: run, Replicas: map[string]process.Replica{"worker-1": {Program: "sleep"}}})

	pid, err := b.Freeze(context.Background(), "worker-1")
	if err != nil || pid != cmd.PID {
		t.Fatalf("Freeze = %d, %v; want %d, nil", pid, err, cmd.PID)
	}
	if s := state(t, pid); s != "T" {
		t.Errorf("frozen process state %q, want T (stopped)", s)
	}
	if err := b.Thaw(pid); err != nil {
		t.Fatal(err)
	}
	if s := state(t, pid); s == "T" {
		t.Errorf("thawed process still stopped")
	}
	// the driver kills a frozen replica: SIGKILL ends a stopped process
	if _, err := b.Freeze(context.Background(), "worker-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.KillReplica(context.Background(), "worker-1"); err != nil {
		t.Fatalf("KillReplica of a frozen replica: %v", err)
	}
	if err := b.Thaw(pid); err != nil {
		t.Errorf("Thaw of a killed pid: %v, want nil", err)
	}
}
