// Package proc starts the benchmark's own long-running processes (the
// services under test, the ceiling stages) and stops exactly those, each by
// its pid: SIGTERM, then SIGKILL after a grace. It never signals a process
// group or anything found by name.
package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Proc is one started process.
type Proc struct {
	Name string
	PID  int
	Log  string // path of its combined stdout and stderr

	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done closes
}

// Start runs argv with env (added to the current environment) in dir,
// appending its output to logPath. It returns once the process runs.
func Start(name string, argv, env []string, dir, logPath string) (*Proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, PID: cmd.Process.Pid, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM to the process and waits up to grace for it to end,
// then sends SIGKILL. It returns the process's exit error, if it ended with
// one other than the signal it was sent. Stop is safe to call twice.
func (p *Proc) Stop(grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) && !exit.Exited() { // ended by a signal: expected
		return nil
	}
	return p.err
}

// Group is the set of processes a benchmark run started. Its methods are
// safe for concurrent use.
type Group struct {
	mu    sync.Mutex
	procs []*Proc
}

// Start starts a process (see Start) and remembers it.
func (g *Group) Start(name string, argv, env []string, dir, logPath string) (*Proc, error) {
	p, err := Start(name, argv, env, dir, logPath)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	g.procs = append(g.procs, p)
	g.mu.Unlock()
	return p, nil
}

// StopAll stops every process of the group, newest first, each by its pid,
// and forgets them.
func (g *Group) StopAll(grace time.Duration) {
	g.mu.Lock()
	procs := g.procs
	g.procs = nil
	g.mu.Unlock()
	var wg sync.WaitGroup
	for i := len(procs) - 1; i >= 0; i-- {
		wg.Add(1)
		go func(p *Proc) {
			defer wg.Done()
			_ = p.Stop(grace)
		}(procs[i])
	}
	wg.Wait()
}

// Named returns the group's live processes called name.
func (g *Group) Named(name string) []*Proc {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*Proc
	for _, p := range g.procs {
		if p.Name == name && !p.Exited() {
			out = append(out, p)
		}
	}
	return out
}
