package main

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncepay/oncepay/loadtest/process"
)

// config is everything faultd reads from its environment, read once by run.
type config struct {
	ListenAddr   string                     // FAULTD_LISTEN_ADDR, default 127.0.0.1:8099
	Runtime      string                     // RUNTIME, default local (the only one so far)
	RunDir       string                     // FAULTD_RUN_DIR, required: the local runtime's state directory
	EventsPath   string                     // FAULTD_EVENTS, required: the fault log (JSON lines), appended to
	Harness      string                     // FAULTD_HARNESS, required: path of scripts/harness
	WaitInFlight time.Duration              // FAULTD_WAIT_IN_FLIGHT, default 2s
	Replicas     map[string]process.Replica // FAULTD_REPLICAS, see defaultReplicas
	RedisURL     string                     // REDIS_URL, required
	// HarnessEnv is passed to harness commands: PATH, HOME, LANG,
	// ONCEPAY_RUN_DIR and every HARNESS_* variable, as found.
	HarnessEnv []string
}

// defaultReplicas matches scripts/local: name=program:probe:port, where
// probe "server" watches requests received on port and "upstream" requests
// sent to port (the psp).
const defaultReplicas = "api-1=api:server:8080,api-2=api:server:8082,worker-1=worker:upstream:8090,worker-2=worker:upstream:8090"

func loadConfig(getenv func(string) string) (config, error) {
	var problems []error
	fail := func(format string, args ...any) { problems = append(problems, fmt.Errorf(format, args...)) }
	str := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	c := config{
		ListenAddr: str("FAULTD_LISTEN_ADDR", "127.0.0.1:8099"),
		Runtime:    str("RUNTIME", "local"),
		RunDir:     str("FAULTD_RUN_DIR", ""),
		EventsPath: str("FAULTD_EVENTS", ""),
		Harness:    str("FAULTD_HARNESS", ""),
		RedisURL:   str("REDIS_URL", ""),
	}
	if c.Runtime != "local" {
		fail("RUNTIME %q: not yet available (only local)", c.Runtime)
	}
	for name, v := range map[string]string{"FAULTD_RUN_DIR": c.RunDir, "FAULTD_EVENTS": c.EventsPath, "FAULTD_HARNESS": c.Harness, "REDIS_URL": c.RedisURL} {
		if v == "" {
			fail("%s is required", name)
		}
	}
	if c.RedisURL != "" {
		if _, err := redis.ParseURL(c.RedisURL); err != nil {
			fail("REDIS_URL is not a redis:// URL")
		}
	}
	var err error
	if c.WaitInFlight, err = time.ParseDuration(str("FAULTD_WAIT_IN_FLIGHT", "2s")); err != nil || c.WaitInFlight <= 0 {
		fail("FAULTD_WAIT_IN_FLIGHT must be a positive duration like 2s")
	}
	if c.Replicas, err = parseReplicas(str("FAULTD_REPLICAS", defaultReplicas)); err != nil {
		fail("FAULTD_REPLICAS: %w", err)
	}
	for _, name := range []string{"PATH", "HOME", "LANG", "ONCEPAY_RUN_DIR", "HARNESS_REDIS_PORT", "HARNESS_PG_PORT",
		"HARNESS_AMQP_PORT", "HARNESS_RABBIT_DIST_PORT", "HARNESS_EPMD_PORT", "HARNESS_START_TIMEOUT"} {
		if v := getenv(name); v != "" {
			c.HarnessEnv = append(c.HarnessEnv, name+"="+v)
		}
	}
	if len(problems) > 0 {
		return config{}, fmt.Errorf("configuration: %w", errors.Join(problems...))
	}
	return c, nil
}

// parseReplicas parses name=program:server|upstream:port,...
func parseReplicas(s string) (map[string]process.Replica, error) {
	out := map[string]process.Replica{}
	for _, item := range strings.Split(s, ",") {
		name, spec, ok := strings.Cut(strings.TrimSpace(item), "=")
		parts := strings.Split(spec, ":")
		if !ok || name == "" || len(parts) != 3 {
			return nil, fmt.Errorf("%q: want name=program:server|upstream:port", item)
		}
		port, err := strconv.Atoi(parts[2])
		if err != nil || port <= 0 || port > 65535 {
			return nil, fmt.Errorf("%q: bad port", item)
		}
		r := process.Replica{Program: parts[0]}
		switch parts[1] {
		case "server":
			r.ServerPort = port
		case "upstream":
			r.UpstreamPort = port
		default:
			return nil, fmt.Errorf("%q: probe must be server or upstream", item)
		}
		out[name] = r
	}
	return out, nil
}

// names returns the replica names running program, sorted.
func names(replicas map[string]process.Replica, program string) []string {
	var out []string
	for name, r := range replicas {
		if r.Program == program {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
