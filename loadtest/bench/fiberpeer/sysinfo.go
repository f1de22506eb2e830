package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times (100 on
// every Linux platform Go runs on).
const clockTicks = 100

// procCPU returns the user + system CPU time process pid has used.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, "(...)", start with the state
	// (field 3); utime and stime are fields 14 and 15.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// loadAvg returns the 1-minute load average, or -1.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	v, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// info returns the fields of Redis INFO section.
func info(ctx context.Context, rdb *redis.Client, section string) (map[string]string, error) {
	s, err := rdb.Info(ctx, section).Result()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}

// redisCPU returns the CPU seconds Redis has used (user + system).
func redisCPU(ctx context.Context, rdb *redis.Client) (float64, error) {
	m, err := info(ctx, rdb, "cpu")
	if err != nil {
		return 0, err
	}
	u, _ := strconv.ParseFloat(m["used_cpu_user"], 64)
	s, _ := strconv.ParseFloat(m["used_cpu_sys"], 64)
	return u + s, nil
}

// redisMemory returns Redis's used_memory and the keys in database db.
func redisMemory(ctx context.Context, rdb *redis.Client, db int) (used uint64, keys int64, err error) {
	m, err := info(ctx, rdb, "memory")
	if err != nil {
		return 0, 0, err
	}
	used, _ = strconv.ParseUint(m["used_memory"], 10, 64)
	c := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, DB: db})
	defer c.Close()
	keys, err = c.DBSize(ctx).Result()
	return used, keys, err
}

// redisServer is the run's private redis-server: no persistence, so that
// no fork or fsync lands in a window.
type redisServer struct {
	cmd *exec.Cmd
	dir string
	rdb *redis.Client
}

func startRedis(ctx context.Context, port int) (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found (make harness-up installs it): %w", err)
	}
	dir, err := os.MkdirTemp("", "fiberpeer-redis-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--logfile", dir+"/redis.log")
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r := &redisServer{cmd: cmd, dir: dir, rdb: redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)})}
	for deadline := time.Now().Add(5 * time.Second); ; {
		err := r.rdb.Ping(ctx).Err()
		if err == nil {
			return r, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			r.stop()
			return nil, fmt.Errorf("redis-server on port %d did not answer (is the port taken? see %s/redis.log): %w", port, dir, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the redis-server the run started, by its pid, and removes its
// directory.
func (r *redisServer) stop() {
	_ = r.rdb.Close()
	_ = r.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = r.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(r.dir)
}
