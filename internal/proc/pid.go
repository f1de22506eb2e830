package proc

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// ErrGone: the pid names no live process (it never existed, has ended, or
// is a zombie).
var ErrGone = errors.New("no such process")

// State returns the state letter of pid in /proc/<pid>/stat (R, S, T, Z,
// ...), or 0 if there is no such process.
func State(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0
	}
	return s[i+2]
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	s := State(pid)
	return s != 0 && s != 'Z'
}

// KillWait sends SIGKILL to pid and waits, at most wait, until it is gone.
// A pid that does not exist gives an error wrapping ErrGone; one the caller
// may not signal, one wrapping syscall.EPERM. The caller must know that pid
// is the process it means.
func KillWait(pid int, wait time.Duration) error {
	if err := signal(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %d: %w", pid, err)
	}
	deadline := time.Now().Add(wait)
	for Alive(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d still alive %s after SIGKILL", pid, wait)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// Freeze sends SIGSTOP to pid and waits, at most wait, until the kernel
// shows it stopped (T): a signal is delivered when the process next runs,
// so without the wait it could still do work after Freeze returned. A pid
// that is or becomes gone gives an error wrapping ErrGone. The caller must
// know that pid is the process it means, and Thaw it.
func Freeze(pid int, wait time.Duration) error {
	if err := signal(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("freeze %d: %w", pid, err)
	}
	deadline := time.Now().Add(wait)
	for {
		switch State(pid) {
		case 'T':
			return nil
		case 0, 'Z':
			return fmt.Errorf("freeze %d: %w", pid, ErrGone)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("freeze %d: not stopped %s after SIGSTOP", pid, wait)
		}
		time.Sleep(time.Millisecond)
	}
}

// Thaw sends SIGCONT to pid, resuming what Freeze stopped. A pid that is
// gone is no error.
func Thaw(pid int) error {
	if err := signal(pid, syscall.SIGCONT); err != nil && !errors.Is(err, ErrGone) {
		return fmt.Errorf("thaw %d: %w", pid, err)
	}
	return nil
}

// signal sends sig to pid; ESRCH becomes ErrGone.
func signal(pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return fmt.Errorf("pid %d: not a single process", pid)
	}
	err := syscall.Kill(pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return ErrGone
	}
	return err
}
