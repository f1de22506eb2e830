package process_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/proc"
	"github.com/oncepay/oncepay/loadtest/process"
)

// startSleep starts `sleep 60` working in dir, reaped at cleanup.
func startSleep(t *testing.T, dir string) *proc.Proc {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := proc.Start(proc.Spec{Name: "sleep", Argv: []string{"sleep", "60"}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

func writePID(t *testing.T, dir string, pid int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "child.pid"), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestKillReplica(t *testing.T) {
	t.Parallel()
	run := t.TempDir()
	sleep := startSleep(t, filepath.Join(run, "api-1"))
	writePID(t, filepath.Join(run, "api-1"), sleep.PID)
	b := process.New(process.Config{RunDir: run, Replicas: map[string]process.Replica{"api-1": {Program: "sleep"}}})

	pid, err := b.KillReplica(context.Background(), "api-1")
	if err != nil {
		t.Fatalf("KillReplica: %v", err)
	}
	if pid != sleep.PID {
		t.Errorf("killed pid %d, want %d", pid, sleep.PID)
	}
	<-sleep.Done()
	err = sleep.Err()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.String() != "signal: killed" {
		t.Errorf("sleep ended with %v, want signal: killed", err)
	}
}

func TestKillReplicaRefusesStrangers(t *testing.T) {
	t.Parallel()
	run := t.TempDir()
	elsewhere := startSleep(t, filepath.Join(run, "elsewhere"))
	mine := startSleep(t, filepath.Join(run, "api-1"))
	tests := []struct {
		name    string
		pidFile string // "" = no pid file
		program string
	}{
		{"no pid file", "", "sleep"},
		{"other program", strconv.Itoa(mine.PID), "api"},
		{"other directory", strconv.Itoa(elsewhere.PID), "sleep"},
		{"gone", "999999999", "sleep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(run, "api-1")
			_ = os.Remove(filepath.Join(dir, "child.pid"))
			if tt.pidFile != "" {
				if err := os.WriteFile(filepath.Join(dir, "child.pid"), []byte(tt.pidFile), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			b := process.New(process.Config{RunDir: run, Replicas: map[string]process.Replica{"api-1": {Program: tt.program}}})
			if _, err := b.KillReplica(context.Background(), "api-1"); !errors.Is(err, process.ErrNotRunning) {
				t.Errorf("KillReplica: %v, want ErrNotRunning", err)
			}
		})
	}
	for _, p := range []*proc.Proc{elsewhere, mine} {
		if !proc.Alive(p.PID) {
			t.Errorf("pid %d is gone; it must have been left alone", p.PID)
		}
	}
}

// selfReplica makes the test process itself a replica: it moves into a
// fresh replica directory (t.Chdir, so the caller must not be parallel),
// writes its own pid there, and returns the run directory, the replica's
// name and its program.
func selfReplica(t *testing.T) (run, name, program string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run, name = t.TempDir(), "self"
	dir := filepath.Join(run, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	writePID(t, dir, os.Getpid())
	return run, name, filepath.Base(exe)
}

func TestInFlight(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	_, p, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(p)

	run, name, program := selfReplica(t)
	server := process.New(process.Config{RunDir: run, Replicas: map[string]process.Replica{name: {Program: program, ServerPort: port}}})
	client := process.New(process.Config{RunDir: run, Replicas: map[string]process.Replica{name: {Program: program, UpstreamPort: port}}})
	look := func(b *process.Backend) int {
		t.Helper()
		n, evidence, err := b.InFlight(context.Background(), "self")
		if err != nil {
			t.Fatalf("InFlight: %v", err)
		}
		t.Logf("InFlight: %d (%s)", n, evidence)
		return n
	}
	// An answered request on a kept-alive connection is not work in flight.
	res, err := srv.Client().Get(srv.URL + "/fast")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	time.Sleep(20 * time.Millisecond) // leave the kernel tick of the answer
	if n := look(server); n != 0 {
		t.Errorf("idle: server side sees %d in flight, want 0", n)
	}
	if n := look(client); n != 0 {
		t.Errorf("idle: client side sees %d in flight, want 0", n)
	}

	done := make(chan error, 1)
	go func() {
		res, err := srv.Client().Get(srv.URL + "/slow")
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	deadline := time.Now().Add(2 * time.Second)
	for look(server) == 0 || look(client) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a request waiting in the handler was never seen in flight on both sides")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
