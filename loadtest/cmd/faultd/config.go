package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/oncepay/oncepay/pkg/service/dial"

	"github.com/oncepay/oncepay/loadtest/container"
	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/process"
)

// config is everything faultd reads from its environment, read once by run.
type config struct {
	ListenAddr   string                     // FAULTD_LISTEN_ADDR, default 127.0.0.1:8099
	Runtime      string                     // RUNTIME: local (default), compose or kind
	Topology     string                     // TOPOLOGY: single (default) or ha, the plans' fault kinds
	EventsPath   string                     // FAULTD_EVENTS, required: the fault log (JSON lines), appended to
	WaitInFlight time.Duration              // FAULTD_WAIT_IN_FLIGHT, default 2s
	MatrixKinds  []string                   // FAULTD_MATRIX_KINDS: comma-separated; the matrix plan holds only these kinds
	Replicas     map[string]process.Replica // FAULTD_REPLICAS, default defaultReplicas[Runtime]
	RedisMode    string                     // REDIS_MODE: single (default), cluster or sentinel (package dial)
	RedisURL     string                     // REDIS_URL, required: the runtime's Redis, for FLUSHALL
	RedisAddrs   map[string]string          // REDIS_CLUSTER_ADDRS: the cluster nodes' announced addresses mapped to reachable ones (package dial)
	// AMQPURL, if set, lets the local backend delete the charge queue
	// (AMQP_URL); PSPAdminURL and PSPToken, if set, take the psp down
	// through its admin listener (PSP_ADMIN_URL, PSP_ADMIN_TOKEN).
	AMQPURL, PSPAdminURL, PSPToken string
	// ToxiproxyURL (TOXIPROXY_URL) is the Toxiproxy API of the local
	// runtime's per-replica proxies; unset, the network faults are refused.
	ToxiproxyURL string

	// RUNTIME=local: processes supervised by scripts/local, services of
	// its own scripts/harness instance.
	RunDir  string // FAULTD_RUN_DIR, required: the local runtime's state directory
	Harness string // FAULTD_HARNESS, required: path of scripts/harness
	// HarnessEnv is passed to harness commands: PATH, HOME, LANG,
	// ONCEPAY_RUN_DIR and every HARNESS_* variable, as found.
	HarnessEnv []string

	// RUNTIME=compose: containers of docker-compose.yml.
	ComposeProject string // FAULTD_COMPOSE_PROJECT, default oncepay
	Docker         string // FAULTD_DOCKER, the docker CLI, default docker

	// RUNTIME=kind: the Helm release of deploy/helm/oncepay.
	Kubectl       string // FAULTD_KUBECTL, default kubectl
	KubeContext   string // FAULTD_KUBE_CONTEXT, default the current context
	KubeNamespace string // FAULTD_KUBE_NAMESPACE, default oncepay
	KubeRelease   string // FAULTD_KUBE_RELEASE, default oncepay
	// KubeKill is FAULTD_KUBE_KILL: sigkill-delete (default: SIGKILL from the
	// host, then the pod deleted so that a fresh one starts without the
	// kubelet's crash back-off), sigkill (in place) or delete (no SIGKILL).
	KubeKill container.KillMode

	// RestartTimeout bounds the wait for a restarted Redis or RabbitMQ
	// container or pod (FAULTD_RESTART_TIMEOUT, default 5m; compose and kind).
	RestartTimeout time.Duration
}

// defaultReplicas are the replicas of each runtime: name=program:probe:port,
// where probe "server" watches requests received on port and "upstream"
// requests sent to port (the psp). Local processes listen on their own
// ports (scripts/local); containers and pods all on their image's ports,
// each in its own network namespace.
var defaultReplicas = map[string]string{
	"local":   "api-1=api:server:8080,api-2=api:server:8082,worker-1=worker:upstream:8090,worker-2=worker:upstream:8090",
	"compose": "api-1=api:server:8080,api-2=api:server:8080,worker-1=worker:upstream:8090,worker-2=worker:upstream:8090",
	"kind":    "api-1=api:server:8080,api-2=api:server:8080,worker-1=worker:upstream:8090,worker-2=worker:upstream:8090",
}

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
		ListenAddr:  str("FAULTD_LISTEN_ADDR", "127.0.0.1:8099"),
		Runtime:     str("RUNTIME", "local"),
		Topology:    str("TOPOLOGY", "single"),
		EventsPath:  str("FAULTD_EVENTS", ""),
		RedisMode:   str("REDIS_MODE", dial.RedisSingle),
		RedisURL:    str("REDIS_URL", ""),
		AMQPURL:     str("AMQP_URL", ""),
		PSPAdminURL: str("PSP_ADMIN_URL", ""),
		PSPToken:    str("PSP_ADMIN_TOKEN", ""),
	}
	if c.Topology != "single" && c.Topology != "ha" {
		fail("TOPOLOGY %q: want single or ha", c.Topology)
	}
	if c.PSPAdminURL != "" && c.PSPToken == "" {
		fail("PSP_ADMIN_TOKEN is required with PSP_ADMIN_URL")
	}
	if c.Runtime == "local" {
		c.ToxiproxyURL = str("TOXIPROXY_URL", "")
	}
	required := map[string]string{"FAULTD_EVENTS": c.EventsPath, "REDIS_URL": c.RedisURL}
	switch c.Runtime {
	case "local":
		c.RunDir, c.Harness = str("FAULTD_RUN_DIR", ""), str("FAULTD_HARNESS", "")
		required["FAULTD_RUN_DIR"], required["FAULTD_HARNESS"] = c.RunDir, c.Harness
	case "compose":
		c.ComposeProject, c.Docker = str("FAULTD_COMPOSE_PROJECT", "oncepay"), str("FAULTD_DOCKER", "docker")
	case "kind":
		c.Kubectl, c.KubeContext = str("FAULTD_KUBECTL", "kubectl"), str("FAULTD_KUBE_CONTEXT", "")
		c.KubeNamespace, c.KubeRelease = str("FAULTD_KUBE_NAMESPACE", "oncepay"), str("FAULTD_KUBE_RELEASE", "oncepay")
		switch m := container.KillMode(str("FAULTD_KUBE_KILL", string(container.KillSIGKILLDelete))); m {
		case container.KillSIGKILLDelete, container.KillSIGKILL, container.KillDelete:
			c.KubeKill = m
		default:
			fail("FAULTD_KUBE_KILL %q: want %s, %s or %s", m, container.KillSIGKILLDelete, container.KillSIGKILL, container.KillDelete)
		}
	default:
		fail("RUNTIME %q: want local, compose or kind", c.Runtime)
	}
	for _, name := range slices.Sorted(maps.Keys(required)) {
		if required[name] == "" {
			fail("%s is required", name)
		}
	}
	var err error
	if c.RedisAddrs, err = dial.ParseClusterAddrs(str("REDIS_CLUSTER_ADDRS", "")); err != nil {
		fail("REDIS_CLUSTER_ADDRS: %w", err)
	}
	if c.RedisURL != "" {
		if err := dial.CheckRedisTuned(c.RedisMode, c.RedisURL, dial.RedisTuning{ClusterAddrs: c.RedisAddrs}); err != nil {
			fail("REDIS_MODE %s, REDIS_URL: %w", c.RedisMode, err)
		}
	}
	for _, k := range strings.FieldsFunc(str("FAULTD_MATRIX_KINDS", ""), func(r rune) bool { return r == ',' || r == ' ' }) {
		c.MatrixKinds = append(c.MatrixKinds, k)
		if _, ok := fault.KindByName(k); !ok {
			fail("FAULTD_MATRIX_KINDS: no fault kind %q", k)
		}
	}
	if c.WaitInFlight, err = time.ParseDuration(str("FAULTD_WAIT_IN_FLIGHT", "2s")); err != nil || c.WaitInFlight <= 0 {
		fail("FAULTD_WAIT_IN_FLIGHT must be a positive duration like 2s")
	}
	if c.RestartTimeout, err = time.ParseDuration(str("FAULTD_RESTART_TIMEOUT", "5m")); err != nil || c.RestartTimeout <= 0 {
		fail("FAULTD_RESTART_TIMEOUT must be a positive duration like 5m")
	}
	if def, ok := defaultReplicas[c.Runtime]; ok {
		if c.Replicas, err = parseReplicas(str("FAULTD_REPLICAS", def)); err != nil {
			fail("FAULTD_REPLICAS: %w", err)
		}
	}
	for _, name := range []string{"PATH", "HOME", "LANG", "ONCEPAY_RUN_DIR", "HARNESS_REDIS_PORT", "HARNESS_PG_PORT",
		"HARNESS_AMQP_PORT", "HARNESS_RABBIT_DIST_PORT", "HARNESS_EPMD_PORT", "HARNESS_START_TIMEOUT",
		"HARNESS_TOPOLOGY", "HARNESS_REDIS_CLUSTER_PORT", "PATRONI_PORT_BASE", "PATRONI_DIR"} {
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
