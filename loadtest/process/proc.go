package process

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/oncepay/oncepay/internal/proc"
)

// ErrNotRunning: the replica has no live process (its supervisor is
// restarting it, or the runtime is down).
var ErrNotRunning = errors.New("not running")

// replicaPID returns the pid in dir/child.pid after checking, in /proc, that
// the process is alive, runs program (the base name of its executable) and
// works in dir.
func replicaPID(dir, program string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("%s: no pid file: %w", dir, ErrNotRunning)
	}
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0, fmt.Errorf("%s/child.pid: %q is not a pid", dir, b)
	}
	if err := isProgram(pid, dir, program); err != nil {
		return 0, err
	}
	return pid, nil
}

// isProgram checks that pid is alive, is program and works in dir.
func isProgram(pid int, dir, program string) error {
	if !proc.Alive(pid) {
		return fmt.Errorf("pid %d: %w", pid, ErrNotRunning)
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return fmt.Errorf("pid %d: %w", pid, ErrNotRunning)
	}
	if base := filepath.Base(strings.TrimSuffix(exe, " (deleted)")); base != program {
		return fmt.Errorf("pid %d runs %s, not %s (stale pid file?): %w", pid, base, program, ErrNotRunning)
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return fmt.Errorf("pid %d: %w", pid, ErrNotRunning)
	}
	want, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if real, err := filepath.EvalSymlinks(want); err == nil {
		want = real
	}
	if cwd != want {
		return fmt.Errorf("pid %d works in %s, not %s (stale pid file?): %w", pid, cwd, want, ErrNotRunning)
	}
	return nil
}
