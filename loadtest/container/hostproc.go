package container

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/oncepay/oncepay/internal/proc"
)

// ErrNotRunning: the replica has no live process right now (its runtime is
// restarting it).
var ErrNotRunning = errors.New("not running")

// alive reports whether pid exists and is not a zombie.
func alive(procRoot string, pid int) bool {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// exeBase is the base name of pid's executable ("api" for /api).
func exeBase(procRoot string, pid int) string {
	exe, err := os.Readlink(filepath.Join(procRoot, strconv.Itoa(pid), "exe"))
	if err != nil {
		return ""
	}
	return filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
}

// sigkill sends SIGKILL to pid, a process in a container, and waits at most
// wait until it is gone (proc.KillWait). The container's runtime sees a
// crash.
func sigkill(pid int, wait time.Duration) error {
	err := proc.KillWait(pid, wait)
	switch {
	case errors.Is(err, proc.ErrGone):
		return fmt.Errorf("pid %d: %w", pid, ErrNotRunning)
	case errors.Is(err, syscall.EPERM):
		return fmt.Errorf("%w (the driver must run as root on the container host)", err)
	}
	return err
}

// pidsInCgroup returns the processes under procRoot whose cgroup path
// contains one of needles and whose executable is program.
func pidsInCgroup(procRoot, program string, needles ...string) ([]int, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cg, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "cgroup"))
		if err != nil {
			continue
		}
		for _, n := range needles {
			if strings.Contains(string(cg), n) {
				if exeBase(procRoot, pid) == program && alive(procRoot, pid) {
					out = append(out, pid)
				}
				break
			}
		}
	}
	return out, nil
}

// pidCache remembers the host pid of each replica between calls, so the
// driver's fast polling of InFlight does not ask the runtime every time. An
// entry is used only while that pid is alive and still runs the program.
// It also remembers the pod (Kube) the pid was found in, so that a kill
// deletes the pod whose process it killed.
type pidCache struct {
	mu   sync.Mutex
	pids map[string]cachedPID
}

type cachedPID struct {
	pid int
	pod string // Kube only
}

func (c *pidCache) get(name, program string) (pid int, pod string, ok bool) {
	c.mu.Lock()
	e, ok := c.pids[name]
	c.mu.Unlock()
	if !ok || !alive("/proc", e.pid) || exeBase("/proc", e.pid) != program {
		return 0, "", false
	}
	return e.pid, e.pod, true
}

func (c *pidCache) put(name string, pid int, pod string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pids == nil {
		c.pids = map[string]cachedPID{}
	}
	c.pids[name] = cachedPID{pid: pid, pod: pod}
}

// drop forgets the replicas named.
func (c *pidCache) drop(names ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range names {
		delete(c.pids, n)
	}
}

// stallPrograms returns the executables the service's main process may
// run (mainPrograms), for the services a stall can freeze (redis).
func stallPrograms(service string) ([]string, error) {
	if service == "redis" {
		return mainPrograms[service], nil
	}
	return nil, fmt.Errorf("stall %q: only redis", service)
}
