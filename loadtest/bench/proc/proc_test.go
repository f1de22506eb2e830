package proc_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/proc"
)

func TestGroupStopsWhatItStarted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var g proc.Group
	p, err := g.Start("sleeper", []string{"sleep", "60"}, nil, dir, filepath.Join(dir, "sleeper.log"))
	if err != nil {
		t.Fatal(err)
	}
	if p.PID <= 0 || p.Exited() {
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

func TestStartFailsForAMissingProgram(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := proc.Start("nothing", []string{filepath.Join(dir, "no-such-program")}, nil, dir, filepath.Join(dir, "x.log")); err == nil {
		t.Error("Start of a missing program: no error")
	}
	if _, err := os.Stat(filepath.Join(dir, "x.log")); err != nil {
		t.Errorf("the log file should exist even so: %v", err)
	}
}
