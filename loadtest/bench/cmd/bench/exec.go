package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// result is a finished command: its output and the CPU time it used
// (user + system, its own children included).
type result struct {
	Out string
	CPU float64 // seconds
}

// command runs argv to completion within timeout, in dir, with env added to
// the environment. Its output goes to logs/<name>.log and is returned. On
// timeout or cancellation the process gets SIGTERM, then SIGKILL 5s later:
// only this process, by its pid.
func (b *bench) command(ctx context.Context, name string, timeout time.Duration, dir string, env []string, argv ...string) (string, error) {
	r, err := b.commandCPU(ctx, name, timeout, dir, env, argv...)
	return r.Out, err
}

// commandCPU is command, also reporting the CPU time used.
func (b *bench) commandCPU(ctx context.Context, name string, timeout time.Duration, dir string, env []string, argv ...string) (result, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	var buf bytes.Buffer
	logf, err := os.OpenFile(filepath.Join(b.cfg.Out, "logs", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return result{}, err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "$ %s\n", strings.Join(argv, " "))
	cmd.Stdout = io.MultiWriter(&buf, logf)
	cmd.Stderr = io.MultiWriter(&buf, logf)
	err = cmd.Run()
	if ctx.Err() != nil && err != nil {
		err = fmt.Errorf("%s: %w (%v)", name, ctx.Err(), err)
	} else if err != nil {
		err = fmt.Errorf("%s: %w; see %s", name, err, logf.Name())
	}
	r := result{Out: buf.String()}
	if ps := cmd.ProcessState; ps != nil {
		r.CPU = (ps.UserTime() + ps.SystemTime()).Seconds()
	}
	return r, err
}

// async starts commandCPU in the background; wait returns its result.
func (b *bench) async(ctx context.Context, name string, timeout time.Duration, dir string, env []string, argv ...string) (wait func() (result, error)) {
	type res struct {
		r   result
		err error
	}
	ch := make(chan res, 1)
	go func() {
		r, err := b.commandCPU(ctx, name, timeout, dir, env, argv...)
		ch <- res{r, err}
	}()
	return func() (result, error) {
		r := <-ch
		return r.r, r.err
	}
}
