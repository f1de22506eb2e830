package deploy_test

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var (
	composeRedisNodes  = []string{"redis", "redis-2", "redis-3", "redis-4", "redis-5", "redis-6"}
	composeRabbitNodes = []string{"rabbitmq", "rabbitmq-2", "rabbitmq-3"}
)

// TestComposeHAConfig validates docker-compose.ha.yml on top of
// docker-compose.yml with the Compose binary when there is one.
func TestComposeHAConfig(t *testing.T) {
	t.Parallel()
	trackInputs(t, "docker-compose.yml")
	trackInputs(t, "docker-compose.ha.yml")
	argv := composeCommand()
	if argv == nil {
		t.Log("no docker compose / docker-compose binary: only the Go checks of TestComposeHA ran")
		return
	}
	root := repoRoot(t)
	args := append(slices.Clone(argv), "-p", "oncepay-test", "-f", filepath.Join(root, "docker-compose.yml"),
		"-f", filepath.Join(root, "docker-compose.ha.yml"), "--project-directory", root, "config", "-q")
	if out, err := run(t, root, args...); err != nil {
		t.Errorf("%v\n%s", err, out)
	}
}

// TestComposeHA checks the overlay: six Redis Cluster nodes and the Job that
// creates the cluster, three RabbitMQ nodes that name each other, the HA env
// contract on api and worker, and the base file's hardening on every node.
func TestComposeHA(t *testing.T) {
	t.Parallel()
	cf, _ := loadComposeFile(t, "docker-compose.ha.yml")
	for _, name := range append(slices.Clone(composeRedisNodes), composeRabbitNodes...) {
		svc, ok := cf.Services[name]
		if !ok {
			t.Errorf("no service %s", name)
			continue
		}
		if svc.Hostname != name {
			t.Errorf("%s: hostname %q, want %q (the name the node announces)", name, svc.Hostname, name)
		}
		if !svc.ReadOnly || svc.User != "999:999" || !slices.Equal(svc.CapDrop, []string{"ALL"}) ||
			!slices.Contains(svc.SecurityOpt, "no-new-privileges:true") || svc.MemLimit == "" || svc.Healthcheck == nil {
			t.Errorf("%s: want read_only, user 999:999, cap_drop ALL, no-new-privileges, mem_limit and a healthcheck: %+v", name, svc)
		}
		for _, p := range svc.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s: port %q is not published on 127.0.0.1 only", name, p)
			}
		}
		if name != "redis" && name != "rabbitmq" && len(svc.Volumes) == 0 {
			t.Errorf("%s: no data volume", name)
		}
	}
	for _, name := range composeRedisNodes {
		cmd := strings.Join(cf.Services[name].Command, " ")
		for _, want := range []string{
			"--appendonly yes", "--appendfsync everysec", "--cluster-enabled yes", "--cluster-config-file /data/nodes.conf",
			"--maxmemory-policy noeviction", "--hash-max-listpack-value 2048", `--cluster-announce-hostname "$(hostname)"`,
			"--cluster-preferred-endpoint-type hostname", `--masterauth "$REDISCLI_AUTH"`,
		} {
			if !strings.Contains(cmd, want) {
				t.Errorf("%s: command lacks %q: %s", name, want, cmd)
			}
		}
		if strings.Contains(cmd, "demo-redis-password") {
			t.Errorf("%s: the password is in the command line, not read from the environment", name)
		}
	}

	init, ok := cf.Services["redis-cluster-init"]
	if !ok {
		t.Fatal("no redis-cluster-init one-shot")
	}
	script := strings.Join(init.Command, " ")
	for _, want := range []string{"--cluster create", "--cluster-replicas 1", "cluster_state:ok", strings.Join(composeRedisNodes, " ")} {
		if !strings.Contains(script, want) {
			t.Errorf("redis-cluster-init: script lacks %q", want)
		}
	}
	for _, n := range composeRedisNodes {
		if init.DependsOn[n].Condition != "service_healthy" {
			t.Errorf("redis-cluster-init: does not wait for %s to be healthy", n)
		}
	}
	if init.Restart != "no" {
		t.Errorf("redis-cluster-init: restart %q, want no (a one-shot)", init.Restart)
	}

	conf, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "compose", "rabbitmq-ha.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(conf), "cluster_formation.peer_discovery_backend = classic_config") {
		t.Error("rabbitmq-ha.conf: no classic-config peer discovery")
	}
	for _, n := range composeRabbitNodes {
		svc := cf.Services[n]
		node := svc.Environment["RABBITMQ_NODENAME"]
		if node != "rabbit@"+n || !strings.Contains(string(conf), "= "+node+"\n") {
			t.Errorf("%s: RABBITMQ_NODENAME %q is not rabbit@%s or not listed in rabbitmq-ha.conf", n, node, n)
		}
		if !slices.ContainsFunc(svc.Volumes, func(v string) bool { return strings.Contains(v, "rabbitmq-ha.conf:") && strings.HasSuffix(v, ":ro") }) ||
			svc.Environment["RABBITMQ_CONFIG_FILES"] == "" {
			t.Errorf("%s: rabbitmq-ha.conf is not mounted read-only and read", n)
		}
		if !strings.Contains(strings.Join(svc.Command, " "), "install -m 0400 /dev/stdin /var/lib/rabbitmq/.erlang.cookie") {
			t.Errorf("%s: the Erlang cookie is not installed owner-only", n)
		}
	}

	for _, name := range []string{"api-1", "api-2", "worker-1", "worker-2"} {
		svc := cf.Services[name]
		env := svc.Environment
		if env["REDIS_MODE"] != "cluster" {
			t.Errorf("%s: REDIS_MODE %q, want cluster", name, env["REDIS_MODE"])
		}
		u, err := url.Parse(env["REDIS_URL"])
		if err != nil {
			t.Fatalf("%s: REDIS_URL: %v", name, err)
		}
		var want []string
		for _, n := range composeRedisNodes {
			want = append(want, n+":6379")
		}
		if seeds := append([]string{u.Host}, u.Query()["addr"]...); !slices.Equal(seeds, want) {
			t.Errorf("%s: REDIS_URL seeds %v, want %v", name, seeds, want)
		}
		var hosts []string
		for _, one := range strings.Split(env["AMQP_URL"], ",") {
			u, err := url.Parse(one)
			if err != nil || u.Scheme != "amqp" {
				t.Errorf("%s: AMQP_URL element %q is not an amqp:// URL", name, one)
				continue
			}
			hosts = append(hosts, u.Hostname())
		}
		if !slices.Equal(hosts, composeRabbitNodes) {
			t.Errorf("%s: AMQP_URL nodes %v, want %v", name, hosts, composeRabbitNodes)
		}
		for dep, cond := range map[string]string{"redis-cluster-init": "service_completed_successfully", "rabbitmq-2": "service_healthy", "rabbitmq-3": "service_healthy"} {
			if svc.DependsOn[dep].Condition != cond {
				t.Errorf("%s: depends_on %s %q, want %s", name, dep, svc.DependsOn[dep].Condition, cond)
			}
		}
	}
}
