package deploy_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// nodeHosts are the stable DNS names of a clustered StatefulSet's pods.
func nodeHosts(component string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s-%s-%d.%s-%s-headless.%s.svc.cluster.local", release, component, i, release, component, namespace))
	}
	return out
}

var (
	redisNodes    = nodeHosts("redis", 6)
	rabbitmqNodes = nodeHosts("rabbitmq", 3)
)

// isHA: the value set installs TOPOLOGY=ha (redis.mode=cluster, rabbitmq.replicas=3).
func isHA(r rendered) bool { return r.set.name == "ha" || r.set.name == "kind-ha" }

func (r rendered) statefulSet(t *testing.T, component string) *appsv1.StatefulSet {
	t.Helper()
	for _, o := range r.byKind("StatefulSet") {
		if s := o.obj.(*appsv1.StatefulSet); s.Spec.Template.Labels["app.kubernetes.io/component"] == component {
			return s
		}
	}
	t.Fatalf("no StatefulSet for %s", component)
	return nil
}

// argAfter is the argument after flag in args, "" when flag is not there.
func argAfter(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// TestChartHA renders TOPOLOGY=ha (the chart's values and kind's) and checks
// what makes it highly available: six Redis Cluster nodes with stable names
// and a Job that creates the cluster, three RabbitMQ nodes that find each
// other through the API server with only the rights they need, and the HA env
// contract on the services.
func TestChartHA(t *testing.T) {
	t.Parallel()
	for _, vs := range valueSets {
		if !strings.HasSuffix(vs.name, "ha") {
			continue
		}
		t.Run(vs.name, func(t *testing.T) {
			t.Parallel()
			r := render(t, vs)
			checkHARedis(t, r)
			checkHARabbitMQ(t, r)
			checkHAEnv(t, r)
			checkHANetwork(t, r)
		})
	}
}

func checkHARedis(t *testing.T, r rendered) {
	s := r.statefulSet(t, "redis")
	if s.Spec.Replicas == nil || *s.Spec.Replicas != 6 {
		t.Errorf("redis: replicas %v, want 6 (3 primaries, 1 replica each)", s.Spec.Replicas)
	}
	c := s.Spec.Template.Spec.Containers[0]
	want := map[string]string{
		"--cluster-enabled":                 "yes",
		"--appendonly":                      "yes",
		"--appendfsync":                     "everysec",
		"--cluster-config-file":             "/data/nodes.conf", // on the volume: a restart keeps its place
		"--cluster-preferred-endpoint-type": "hostname",
		"--cluster-announce-hostname":       fmt.Sprintf("$(POD_NAME).%s-redis-headless.%s.svc.cluster.local", release, namespace),
		"--masterauth":                      "$(REDIS_PASSWORD)", // replicas authenticate to their primary
	}
	if r.set.name == "kind-ha" { // redis.clusterNodePorts: the host follows redirects
		want["--cluster-preferred-endpoint-type"], want["--cluster-announce-hostname"] = "ip", ""
		checkHARedisNodePorts(t, r, c)
	}
	for flag, want := range want {
		if got := argAfter(c.Args, flag); got != want {
			t.Errorf("redis: %s %q, want %q", flag, got, want)
		}
	}
	if v, _ := envValue(c, "POD_NAME"); v != "" || !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name"
	}) {
		t.Error("redis: POD_NAME is not the pod's name (the announced hostname needs it)")
	}
	if !hasPort(pod{spec: s.Spec.Template.Spec}, "16379") {
		t.Error("redis: no cluster bus port 16379")
	}

	var job *batchv1.Job
	for _, o := range r.byKind("Job") {
		if o.meta.Labels["app.kubernetes.io/component"] == "redis-cluster-init" {
			job = o.obj.(*batchv1.Job)
		}
	}
	if job == nil {
		t.Fatal("no Job creating the Redis Cluster")
	}
	// not a post-install hook: `helm install --wait` runs those only once api
	// and worker are ready, which they are not before the cluster exists
	if hook, ok := job.Annotations["helm.sh/hook"]; ok {
		t.Errorf("Job %s: helm.sh/hook=%q: install --wait would never get to it", job.Name, hook)
	}
	if job.Name != release+"-redis-cluster-init-1" {
		t.Errorf("Job %s: want the name per revision (%s-redis-cluster-init-<revision>): a Job's spec cannot change on upgrade", job.Name, release)
	}
	script := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
	for _, want := range append([]string{"cluster addslotsrange 0 5460", "cluster addslotsrange 10923 16383", "cluster meet", "cluster replicate", "cluster_state:ok", "cluster_known_nodes"}, redisNodes...) {
		if !strings.Contains(script, want) {
			t.Errorf("Job %s: script lacks %q:\n%s", job.Name, want, script)
		}
	}
	if _, ok := envValue(job.Spec.Template.Spec.Containers[0], "REDISCLI_AUTH"); !ok {
		t.Errorf("Job %s: no REDISCLI_AUTH (the password must not be an argument)", job.Name)
	}
	if strings.Contains(script, "-a ") {
		t.Errorf("Job %s: passes a password with -a", job.Name)
	}
}

func checkHARabbitMQ(t *testing.T, r rendered) {
	s := r.statefulSet(t, "rabbitmq")
	if s.Spec.Replicas == nil || *s.Spec.Replicas != 3 {
		t.Errorf("rabbitmq: replicas %v, want 3", s.Spec.Replicas)
	}
	// OrderedReady: the first node forms the cluster, the next ones join it
	if s.Spec.PodManagementPolicy == appsv1.ParallelPodManagement {
		t.Error("rabbitmq: Parallel pod management lets the nodes form separate clusters on first boot")
	}
	spec := s.Spec.Template.Spec
	c := spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if want := fmt.Sprintf("rabbit@$(POD_NAME).%s-rabbitmq-headless.%s.svc.cluster.local", release, namespace); env["RABBITMQ_NODENAME"] != want || env["RABBITMQ_USE_LONGNAME"] != "true" {
		t.Errorf("rabbitmq: RABBITMQ_NODENAME %q (long names %q), want %q", env["RABBITMQ_NODENAME"], env["RABBITMQ_USE_LONGNAME"], want)
	}
	for name, v := range env {
		if strings.Contains(strings.ToLower(name+v), "cookie") {
			t.Errorf("rabbitmq: the Erlang cookie must not be in the environment (%s)", name)
		}
	}

	// configuration: peer discovery through the headless Service
	var conf, plugins string
	for _, o := range r.byKind("ConfigMap") {
		if cm := o.obj.(*corev1.ConfigMap); cm.Name == release+"-rabbitmq-config" {
			conf, plugins = cm.Data["rabbitmq.conf"], cm.Data["enabled_plugins"]
		}
	}
	for _, want := range []string{
		"cluster_formation.peer_discovery_backend = rabbit_peer_discovery_k8s",
		"cluster_formation.k8s.address_type = hostname",
		"cluster_formation.k8s.service_name = " + release + "-rabbitmq-headless",
		"cluster_partition_handling = pause_minority",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("rabbitmq.conf lacks %q:\n%s", want, conf)
		}
	}
	if !strings.Contains(plugins, "rabbitmq_peer_discovery_k8s") {
		t.Errorf("enabled_plugins %q lacks rabbitmq_peer_discovery_k8s", plugins)
	}
	if env["RABBITMQ_CONFIG_FILES"] == "" || env["RABBITMQ_ENABLED_PLUGINS_FILE"] == "" {
		t.Error("rabbitmq: the ConfigMap's files are not what the server reads")
	}

	// the cookie: a Secret key, copied onto the data volume owner-only
	var cookie *corev1.SecretVolumeSource
	for _, v := range spec.Volumes {
		if v.Secret != nil && slices.ContainsFunc(v.Secret.Items, func(k corev1.KeyToPath) bool { return k.Key == "rabbitmq-erlang-cookie" }) {
			cookie = v.Secret
		}
	}
	if cookie == nil {
		t.Fatal("rabbitmq: no volume with the Secret's rabbitmq-erlang-cookie")
	}
	if !r.secretHasKey(cookie.SecretName, "rabbitmq-erlang-cookie") {
		t.Errorf("rabbitmq: Secret %s has no rabbitmq-erlang-cookie", cookie.SecretName)
	}
	if len(spec.InitContainers) != 1 || !strings.Contains(strings.Join(spec.InitContainers[0].Command, " "), "-m 0400") ||
		!strings.Contains(strings.Join(spec.InitContainers[0].Command, " "), "/var/lib/rabbitmq/.erlang.cookie") {
		t.Errorf("rabbitmq: want one init container installing the cookie 0400 as /var/lib/rabbitmq/.erlang.cookie, got %+v", spec.InitContainers)
	}

	// RBAC: get on the headless Service's endpoints, for this ServiceAccount only
	if spec.ServiceAccountName != release+"-rabbitmq" || spec.AutomountServiceAccountToken == nil || !*spec.AutomountServiceAccountToken {
		t.Errorf("rabbitmq: serviceAccountName %q, automount %v: peer discovery needs the token of %s-rabbitmq",
			spec.ServiceAccountName, spec.AutomountServiceAccountToken, release)
	}
	var role *rbacv1.Role
	for _, o := range r.byKind("Role") {
		if o.meta.Name == release+"-rabbitmq-peer-discovery" {
			role = o.obj.(*rbacv1.Role)
		}
	}
	if role == nil {
		t.Fatal("no peer-discovery Role")
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"endpoints"},
		ResourceNames: []string{release + "-rabbitmq-headless"}, Verbs: []string{"get"}}}
	if fmt.Sprint(role.Rules) != fmt.Sprint(want) {
		t.Errorf("Role %s: rules %+v, want %+v", role.Name, role.Rules, want)
	}
	var bound bool
	for _, o := range r.byKind("RoleBinding") {
		rb := o.obj.(*rbacv1.RoleBinding)
		if rb.RoleRef.Name == role.Name {
			bound = len(rb.Subjects) == 1 && rb.Subjects[0].Kind == "ServiceAccount" &&
				rb.Subjects[0].Name == spec.ServiceAccountName && rb.Subjects[0].Namespace == namespace
		}
	}
	if !bound {
		t.Errorf("Role %s is not bound to ServiceAccount %s alone", role.Name, spec.ServiceAccountName)
	}
	// a node that (re)joins adds itself to every quorum queue lacking it;
	// clients do not wait for every node (a node down must not keep an api
	// or worker pod from starting)
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil || c.Lifecycle.PostStart.Exec == nil ||
		!strings.Contains(strings.Join(c.Lifecycle.PostStart.Exec.Command, " "), `rabbitmq-queues -q grow "$RABBITMQ_NODENAME" all`) {
		t.Error("rabbitmq: no postStart adding the node to the quorum queues (rabbitmq-queues grow)")
	}
	// a TCP readiness check: a rabbitmq-diagnostics run every few seconds per
	// node starts an Erlang VM each time, which starved the kind node under load
	if c.ReadinessProbe == nil || c.ReadinessProbe.TCPSocket == nil {
		t.Errorf("rabbitmq: readiness %+v, want a TCP check of the AMQP port", c.ReadinessProbe)
	}
	for _, p := range []string{"4369", "25672"} {
		if !hasPort(pod{spec: spec}, p) {
			t.Errorf("rabbitmq: no container port %s", p)
		}
	}
}

func (r rendered) secretHasKey(name, key string) bool {
	for _, o := range r.byKind("Secret") {
		if s := o.obj.(*corev1.Secret); s.Name == name {
			_, ok := s.Data[key]
			return ok
		}
	}
	return false
}

// checkHAEnv: api and worker get the HA env contract: REDIS_MODE=cluster and
// every Redis node as a seed in ParseClusterURL's form, and every RabbitMQ
// node in the AMQP_URL list.
func checkHAEnv(t *testing.T, r rendered) {
	for _, o := range r.byKind("Deployment") {
		d := o.obj.(*appsv1.Deployment)
		svc := d.Spec.Template.Labels["app.kubernetes.io/component"]
		if svc == "psp" {
			continue
		}
		c := d.Spec.Template.Spec.Containers[0]
		if v, _ := envValue(c, "REDIS_MODE"); v != "cluster" {
			t.Errorf("%s: REDIS_MODE %q, want cluster", svc, v)
		}
		// the password is a reference to the Secret, filled in by the kubelet
		ru, _ := envValue(c, "REDIS_URL")
		u, err := url.Parse(strings.ReplaceAll(ru, "$(ONCEPAY_REDIS_PASSWORD)", "pw"))
		if err != nil {
			t.Fatalf("%s: REDIS_URL: %v", svc, err)
		}
		seeds := append([]string{u.Host}, u.Query()["addr"]...)
		var want []string
		for _, h := range redisNodes {
			want = append(want, h+":6379")
		}
		if !slices.Equal(seeds, want) || u.Path != "" || u.User.String() != ":pw" {
			t.Errorf("%s: REDIS_URL %q: seeds %v (path %q), want %v, no database, the password from the Secret", svc, ru, seeds, u.Path, want)
		}
		if svc == "api" && !slices.Contains(d.Spec.Template.Spec.InitContainers[0].Command, release+"-redis:6379") {
			t.Errorf("api: does not wait for Redis")
		}
		au, _ := envValue(c, "AMQP_URL")
		var hosts []string
		for _, one := range strings.Split(au, ",") {
			u, err := url.Parse(strings.ReplaceAll(one, "$(ONCEPAY_RABBITMQ_PASSWORD)", "pw"))
			if err != nil || u.Scheme != "amqp" || u.User.String() != "oncepay:pw" {
				t.Errorf("%s: AMQP_URL element %q is not an amqp:// URL with the Secret's password", svc, one)
				continue
			}
			hosts = append(hosts, u.Hostname())
		}
		if !slices.Equal(hosts, rabbitmqNodes) {
			t.Errorf("%s: AMQP_URL nodes %v, want %v", svc, hosts, rabbitmqNodes)
		}
	}
}

// checkHANetwork: the NetworkPolicies let the clusters talk: the Redis bus
// between Redis pods, the cluster-create Job to Redis, epmd and Erlang
// distribution between RabbitMQ pods, and RabbitMQ to the API server.
func checkHANetwork(t *testing.T, r rendered) {
	policy := map[string]*networkingv1.NetworkPolicy{}
	for _, o := range r.byKind("NetworkPolicy") {
		np := o.obj.(*networkingv1.NetworkPolicy)
		policy[np.Spec.PodSelector.MatchLabels["app.kubernetes.io/component"]] = np
	}
	ingressFrom := func(np *networkingv1.NetworkPolicy, from string, port int) bool {
		for _, rule := range np.Spec.Ingress {
			if slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool { return p.Port.IntValue() == port }) &&
				slices.ContainsFunc(rule.From, func(p networkingv1.NetworkPolicyPeer) bool {
					return p.PodSelector != nil && p.PodSelector.MatchLabels["app.kubernetes.io/component"] == from
				}) {
				return true
			}
		}
		return false
	}
	egressTo := func(np *networkingv1.NetworkPolicy, to string, port int) bool {
		for _, rule := range np.Spec.Egress {
			if slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool { return p.Port.IntValue() == port }) &&
				(to == "" && len(rule.To) == 0 || slices.ContainsFunc(rule.To, func(p networkingv1.NetworkPolicyPeer) bool {
					return p.PodSelector != nil && p.PodSelector.MatchLabels["app.kubernetes.io/component"] == to
				})) {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		pol, peer string
		port      int
		ingress   bool
	}{
		{"redis", "redis", 16379, true}, {"redis", "redis", 6379, true}, {"redis", "redis", 16379, false},
		{"redis", "redis-cluster-init", 6379, true}, {"redis-cluster-init", "redis", 6379, false},
		{"rabbitmq", "rabbitmq", 4369, true}, {"rabbitmq", "rabbitmq", 25672, true},
		{"rabbitmq", "rabbitmq", 25672, false}, {"rabbitmq", "", 443, false},
	} {
		np := policy[c.pol]
		if np == nil {
			t.Errorf("no NetworkPolicy for %s", c.pol)
			continue
		}
		if c.ingress && !ingressFrom(np, c.peer, c.port) {
			t.Errorf("NetworkPolicy %s: no ingress from %s on %d", np.Name, c.peer, c.port)
		}
		if !c.ingress && !egressTo(np, c.peer, c.port) {
			t.Errorf("NetworkPolicy %s: no egress to %q on %d", np.Name, c.peer, c.port)
		}
	}
}

// checkHARedisNodePorts: with redis.clusterNodePorts, node i announces
// $HOST_IP:30400+i (bus 30410+i) and a NodePort Service per pod publishes
// exactly those ports.
func checkHARedisNodePorts(t *testing.T, r rendered, c corev1.Container) {
	script := strings.Join(c.Command, " ")
	for _, want := range []string{`i=${POD_NAME##*-}`, `exec redis-server "$@"`, `--cluster-announce-ip "$HOST_IP"`,
		"--cluster-announce-port $((30400 + i))", "--cluster-announce-bus-port $((30410 + i))"} {
		if !strings.Contains(script, want) {
			t.Errorf("redis: command lacks %q: %s", want, script)
		}
	}
	if len(c.Args) == 0 || c.Args[0] != "redis-server" {
		t.Errorf("redis: args %v must start with redis-server ($0 of the command's script)", c.Args)
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "HOST_IP" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.hostIP"
	}) {
		t.Error("redis: HOST_IP is not the node's IP")
	}
	services := map[string]*corev1.Service{}
	for _, o := range r.byKind("Service") {
		services[o.meta.Name] = o.obj.(*corev1.Service)
	}
	for i := range 6 {
		s := services[fmt.Sprintf("%s-redis-%d-node", release, i)]
		if s == nil {
			t.Errorf("no NodePort Service for Redis node %d", i)
			continue
		}
		ports := map[string]int32{}
		for _, p := range s.Spec.Ports {
			ports[p.TargetPort.String()] = p.NodePort
		}
		if s.Spec.Type != corev1.ServiceTypeNodePort || s.Spec.Selector["statefulset.kubernetes.io/pod-name"] != fmt.Sprintf("%s-redis-%d", release, i) ||
			ports["redis"] != int32(30400+i) || ports["cluster-bus"] != int32(30410+i) {
			t.Errorf("Service %s: want NodePort %d (redis) and %d (cluster-bus) to pod %s-redis-%d, got %s %v %v",
				s.Name, 30400+i, 30410+i, release, i, s.Spec.Type, s.Spec.Selector, ports)
		}
	}
}
