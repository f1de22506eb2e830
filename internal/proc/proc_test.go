package proc_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/proc"
)

func TestGroupStopsWhatItStarted(t *testing.T) {
	t.Parallel()
	var g proc.Group
	p, err := g.Start(proc.Spec{Name: "sleeper", Argv: []string{"sleep", "60"}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if p.PID <= 0 || p.Exited() || !proc.Alive(p.PID) {
		t.Fatalf("pid %d, exited %v: not running", p.PID, p.Exited())
	}
	if got := g.Named("sleeper"); len(got) != 1 || got[0] != p {
		t.Errorf("Named(sleeper) = %v, want the started process", got)
	}
	g.StopAll(5 * time.Second) // SIGTERM ends sleep at once
	if !p.Exited() {
		t.Error("still running after StopAll")
	}
	if len(g.Named("sleeper")) != 0 {
		t.Error("StopAll did not forget the process")
	}
	if err := p.Stop(time.Second); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestStopKillsAfterTheGrace(t *testing.T) {
	t.Parallel()
	p, err := proc.Start(proc.Spec{Name: "stubborn", Argv: []string{"sh", "-c", "trap '' TERM; sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the shell set its trap
	start := time.Now()
	if err := p.Stop(200 * time.Millisecond); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if !p.Exited() {
		t.Fatal("still running after Stop")
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("stopped after %s, before the grace: the TERM trap did not hold", d)
	}
}

func TestStartFailsForAMissingProgram(t *testing.T) {
	t.Parallel()
	if _, err := proc.Start(proc.Spec{Name: "nothing", Argv: []string{filepath.Join(t.TempDir(), "no-such-program")}}); err == nil {
		t.Error("Start of a missing program: no error")
	}
}

func TestRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		argv    []string
		timeout time.Duration
		wantOut string
		wantErr string // "" = none
	}{
		{"output and log", []string{"sh", "-c", "echo hello; echo oops >&2"}, 10 * time.Second, "hello\noops\n", ""},
		{"exit status", []string{"sh", "-c", "echo why; exit 3"}, 10 * time.Second, "why\n", "exit status 3: why"},
		{"timeout", []string{"sleep", "60"}, 100 * time.Millisecond, "", "context deadline exceeded"},
		{"child left running", []string{"sh", "-c", "sleep 7 & echo started"}, 30 * time.Second, "started\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var log bytes.Buffer
			r, err := proc.Run(context.Background(), proc.Spec{Name: "cmd", Argv: tt.argv, Log: &log}, tt.timeout)
			if r.Out != tt.wantOut {
				t.Errorf("Out = %q, want %q", r.Out, tt.wantOut)
			}
			if !strings.HasPrefix(log.String(), "$ "+tt.argv[0]) || !strings.HasSuffix(log.String(), tt.wantOut) {
				t.Errorf("log = %q, want the command line, then the output", log.String())
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("err = %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestOnlyEnv(t *testing.T) {
	t.Setenv("PROC_TEST_LEAK", "leaked")
	for _, only := range []bool{false, true} {
		r, err := proc.Run(context.Background(), proc.Spec{Name: "env", Argv: []string{"sh", "-c", "echo $PROC_TEST_LEAK/$MINE"},
			Env: []string{"MINE=mine"}, OnlyEnv: only}, 10*time.Second)
		want := "leaked/mine\n"
		if only {
			want = "/mine\n"
		}
		if err != nil || r.Out != want {
			t.Errorf("OnlyEnv %v: %q, %v; want %q", only, r.Out, err, want)
		}
	}
}

func TestKillWait(t *testing.T) {
	t.Parallel()
	p, err := proc.Start(proc.Spec{Name: "victim", Argv: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.KillWait(p.PID, 3*time.Second); err != nil {
		t.Fatalf("KillWait: %v", err)
	}
	<-p.Done()
	if proc.Alive(p.PID) || proc.State(p.PID) != 0 {
		t.Errorf("pid %d: state %q after KillWait and reaping", p.PID, proc.State(p.PID))
	}
}

func TestWaitHTTP(t *testing.T) {
	t.Parallel()
	ready := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ready {
			ready = true // the second poll succeeds
			http.Error(w, "starting", http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	if err := proc.WaitHTTP(context.Background(), nil, srv.URL, 5*time.Second); err != nil {
		t.Errorf("WaitHTTP of a server that becomes ready: %v", err)
	}

	p, err := proc.Start(proc.Spec{Name: "quitter", Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	err = proc.WaitHTTP(context.Background(), p, "http://127.0.0.1:1/readyz", time.Minute)
	if err == nil || !strings.Contains(err.Error(), "quitter exited") || !strings.Contains(err.Error(), "last answer: ") {
		t.Errorf("WaitHTTP of a process that exits: %v, want it named as exited", err)
	}
}

func TestFreezeThaw(t *testing.T) {
	t.Parallel()
	p, err := proc.Start(proc.Spec{Name: "sleeper", Argv: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if err := proc.Freeze(p.PID, time.Second); err != nil {
		t.Fatalf("Freeze: %v", err)
	}
	if got := proc.State(p.PID); got != 'T' {
		t.Errorf("state after Freeze = %q, want T", got)
	}
	if err := proc.Thaw(p.PID); err != nil {
		t.Fatalf("Thaw: %v", err)
	}
	if got := proc.State(p.PID); got == 'T' || !proc.Alive(p.PID) {
		t.Errorf("state after Thaw = %q, want a live, running process", got)
	}
}

func TestGonePID(t *testing.T) {
	t.Parallel()
	p, err := proc.Start(proc.Spec{Name: "quick", Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done() // reaped: the pid names nothing now
	if err := proc.KillWait(p.PID, time.Second); !errors.Is(err, proc.ErrGone) {
		t.Errorf("KillWait of a gone pid: %v, want ErrGone", err)
	}
	if err := proc.Freeze(p.PID, time.Second); !errors.Is(err, proc.ErrGone) {
		t.Errorf("Freeze of a gone pid: %v, want ErrGone", err)
	}
	if err := proc.Thaw(p.PID); err != nil {
		t.Errorf("Thaw of a gone pid: %v, want none", err)
	}
}
