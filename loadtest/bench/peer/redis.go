package peer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/redisinfo"
	"github.com/redis/go-redis/v9"

	"github.com/oncepay/oncepay/internal/proc"
)

// redisServer is a private redis-server with AOF everysec, one per cell, so
// that every cell starts empty and no AOF rewrite runs during a window.
type redisServer struct {
	p   *proc.Proc
	dir string
	rdb *redis.Client
}

func startRedis(ctx context.Context, bin string, port int) (*redisServer, error) {
	dir, err := os.MkdirTemp("", "bench-peer-redis-")
	if err != nil {
		return nil, err
	}
	p, err := proc.Start(proc.Spec{Name: "redis-server", Argv: []string{bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
		"--auto-aof-rewrite-percentage", "0", "--logfile", dir + "/redis.log"}})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r := &redisServer{p: p, dir: dir, rdb: redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), MaxRetries: -1})}
	deadline := time.Now().Add(5 * time.Second)
	for {
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

// stop ends the server (SIGTERM, SIGKILL after 5 s) and removes its
// directory.
func (r *redisServer) stop() {
	r.rdb.Close()
	_ = r.p.Stop(5 * time.Second)
	os.RemoveAll(r.dir)
}

// redisSnap is Redis's own CPU (user + sys of the server process, every
// thread) and its command counts at one moment.
type redisSnap struct {
	cpu   float64
	calls map[string]int64
}

func (r *redisServer) snapshot(ctx context.Context) (redisSnap, error) {
	info, err := r.rdb.Info(ctx, "cpu", "commandstats").Result()
	if err != nil {
		return redisSnap{}, fmt.Errorf("redis info: %w", err)
	}
	return parseInfo(info)
}

func parseInfo(info string) (redisSnap, error) {
	s := redisSnap{calls: redisinfo.Calls(info)}
	var haveCPU int
	for line := range strings.Lines(info) {
		name, val, _ := strings.Cut(strings.TrimSpace(line), ":")
		if name == "used_cpu_sys" || name == "used_cpu_user" {
			f, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return s, fmt.Errorf("redis info %s: %w", name, err)
			}
			s.cpu += f
			haveCPU++
		}
	}
	if haveCPU != 2 {
		return s, errors.New("redis info: no used_cpu_sys/used_cpu_user")
	}
	return s, nil
}

// requestCommands are the commands a client sends; every other command in
// commandstats ran inside a script.
var requestCommands = map[string]bool{
	"evalsha": true, "eval": true, "fcall": true, "set": true, "get": true, "del": true,
}
