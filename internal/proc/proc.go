// Package proc owns the lifecycle of the processes oncepay's Go runners and
// tests start: run a command to completion within a time limit, start a
// long-running one with its output in a log, stop it (SIGTERM, then
// SIGKILL after a grace), and stop every process of a Group at the end.
//
// It signals only processes it started, each by its pid, never a process
// group or anything found by name; for a process someone else started (a
// supervisor's child) it offers Alive, State and KillWait by pid, which the
// caller uses only after checking that the pid is the one it means.
//
// It imports the standard library only, so that every module (the loadtest
// runners, the services' tests) can use it.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Spec describes a process to start.
type Spec struct {
	Name string   // for errors and Group.Named
	Argv []string // program and arguments
	Env  []string // added to the current environment
	// OnlyEnv gives the process Env and PATH alone, none of the rest of the
	// current environment.
	OnlyEnv bool
	Dir     string // working directory; "" is the current one
	// Log, if set, receives the process's stdout and stderr.
	Log io.Writer
}

func (s Spec) command(ctx context.Context) *exec.Cmd {
	cmd := exec.CommandContext(ctx, s.Argv[0], s.Argv[1:]...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), s.Env...)
	if s.OnlyEnv {
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, s.Env...)
	}
	return cmd
}

// Result is a finished command: its combined output and the CPU time it
// and the children it waited for used (user + system).
type Result struct {
	Out string
	CPU time.Duration
}

// Run runs s to completion within timeout and returns its output (also
// copied to s.Log). On timeout or cancellation of ctx the process gets
// SIGTERM, then SIGKILL 5 s later. A process that succeeds but leaves
// children holding its output (a script that starts daemons) succeeds 5 s
// after it exits; what those children write later is not captured. The
// error names s and says why.
func Run(ctx context.Context, s Spec, timeout time.Duration) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := s.command(ctx)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	var buf bytes.Buffer
	var w io.Writer = &buf
	if s.Log != nil {
		fmt.Fprintf(s.Log, "$ %s\n", strings.Join(s.Argv, " "))
		w = io.MultiWriter(&buf, s.Log)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) && ctx.Err() == nil {
		err = nil // it exited 0; a child it left running holds the output
	}
	switch {
	case err != nil && ctx.Err() != nil:
		err = fmt.Errorf("%s: %w (%v)", s.Name, ctx.Err(), err)
	case err != nil:
		err = fmt.Errorf("%s: %w: %s", s.Name, err, lastLines(buf.String(), 5))
	}
	r := Result{Out: buf.String()}
	if ps := cmd.ProcessState; ps != nil {
		r.CPU = ps.UserTime() + ps.SystemTime()
	}
	return r, err
}

// Proc is one started process. Its methods are safe for concurrent use.
type Proc struct {
	Name string
	PID  int

	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done closes
}

// Start starts s and returns once the process runs. The process outlives
// ctx only as Stop or Group.StopAll allow: ctx is not tied to it.
func Start(s Spec) (*Proc, error) {
	cmd := s.command(context.Background())
	if s.Log != nil {
		cmd.Stdout, cmd.Stderr = s.Log, s.Log
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Name, err)
	}
	p := &Proc{Name: s.Name, PID: cmd.Process.Pid, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Done is closed when the process has ended.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is the process's exit error once it has ended (nil before).
func (p *Proc) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// Kill sends SIGKILL and waits until the process has ended: a crash.
func (p *Proc) Kill() {
	if !p.Exited() {
		_ = p.cmd.Process.Kill()
	}
	<-p.done
}

// Stop sends SIGTERM and waits up to grace for the process to end, then
// sends SIGKILL. It returns the exit error, unless the process ended by a
// signal (the one Stop sent). Stop is safe to call twice.
func (p *Proc) Stop(grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) && !exit.Exited() {
		return nil
	}
	return p.err
}

// Group is the set of processes a runner started. Its methods are safe for
// concurrent use.
type Group struct {
	mu    sync.Mutex
	procs []*Proc
}

// Start starts s (see Start) and remembers the process.
func (g *Group) Start(s Spec) (*Proc, error) {
	p, err := Start(s)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	g.procs = append(g.procs, p)
	g.mu.Unlock()
	return p, nil
}

// StopAll stops every process of the group at once (see Proc.Stop) and
// forgets them.
func (g *Group) StopAll(grace time.Duration) {
	g.mu.Lock()
	procs := g.procs
	g.procs = nil
	g.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() { _ = p.Stop(grace) })
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

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
