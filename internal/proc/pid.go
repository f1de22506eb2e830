package proc

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

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
// The caller must know that pid is the process it means.
func KillWait(pid int, wait time.Duration) error {
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
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
