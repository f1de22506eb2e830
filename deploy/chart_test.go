package deploy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const (
	release     = "oncepay"
	namespace   = "payments"
	kubeVersion = "1.33.0" // the lab's cluster; also the k8s.io/api version in go.mod
)

// valueSet is one way of installing the chart. files are relative to the
// repository root; set are --set flags, setString --set-string flags.
type valueSet struct {
	name      string
	files     []string
	set       []string
	setString []string
}

var valueSets = []valueSet{
	{name: "default"},
	{name: "minimal", files: []string{"deploy/testdata/values-minimal.yaml"}},
	{name: "merchant-keys", set: []string{
		"merchants.merchant_a=key-a-0123456789abcdef", "merchants.merchant_b=key-b-0123456789abcdef",
	}},
	{name: "no-networkpolicy", set: []string{"networkPolicy.enabled=false"}},
	{name: "kind", files: []string{"deploy/kind/values.yaml"}},
	{name: "kind-ha", files: []string{"deploy/kind/values.yaml", "deploy/kind/values-ha.yaml"}},
	{name: "ha", set: []string{"redis.mode=cluster", "rabbitmq.replicas=3"}},
	{name: "registry", files: []string{"deploy/testdata/values-registry.yaml"}},
	{name: "otlp-endpoint", set: []string{"tracing.otlpEndpoint=http://collector.observability:4318"}},
}

// rendered is one rendered manifest, decoded.
type rendered struct {
	set     valueSet
	objects []object
}

type object struct {
	kind string
	meta metav1.ObjectMeta
	obj  any // *appsv1.Deployment, ...
}

// prototypes lists every kind the chart may render. A kind not listed here
// fails the test: add it deliberately.
var prototypes = map[string]func() any{
	"ConfigMap":           func() any { return &corev1.ConfigMap{} },
	"Secret":              func() any { return &corev1.Secret{} },
	"Service":             func() any { return &corev1.Service{} },
	"ServiceAccount":      func() any { return &corev1.ServiceAccount{} },
	"Pod":                 func() any { return &corev1.Pod{} },
	"Deployment":          func() any { return &appsv1.Deployment{} },
	"StatefulSet":         func() any { return &appsv1.StatefulSet{} },
	"Job":                 func() any { return &batchv1.Job{} },
	"PodDisruptionBudget": func() any { return &policyv1.PodDisruptionBudget{} },
	"NetworkPolicy":       func() any { return &networkingv1.NetworkPolicy{} },
	"Role":                func() any { return &rbacv1.Role{} },
	"RoleBinding":         func() any { return &rbacv1.RoleBinding{} },
}

var wantAPIVersion = map[string]string{
	"ConfigMap": "v1", "Secret": "v1", "Service": "v1", "ServiceAccount": "v1", "Pod": "v1",
	"Deployment": "apps/v1", "StatefulSet": "apps/v1", "Job": "batch/v1",
	"PodDisruptionBudget": "policy/v1", "NetworkPolicy": "networking.k8s.io/v1",
	"Role": "rbac.authorization.k8s.io/v1", "RoleBinding": "rbac.authorization.k8s.io/v1",
}

func chartDir(t testing.TB) string { return filepath.Join(repoRoot(t), "deploy", "helm", "oncepay") }

func helmArgs(t testing.TB, vs valueSet) []string {
	root := repoRoot(t)
	var args []string
	for _, f := range vs.files {
		args = append(args, "-f", filepath.Join(root, f))
	}
	for _, s := range vs.set {
		args = append(args, "--set", s)
	}
	for _, s := range vs.setString {
		args = append(args, "--set-string", s)
	}
	return args
}

// render runs helm template for vs (hooks and tests included) and decodes
// every document strictly into its Kubernetes type.
func render(t *testing.T, vs valueSet) rendered {
	t.Helper()
	trackInputs(t, "deploy/helm/oncepay")
	for _, f := range vs.files {
		trackInputs(t, f)
	}
	argv := append([]string{helmBin(t), "template", release, chartDir(t), "--namespace", namespace,
		"--kube-version", kubeVersion}, helmArgs(t, vs)...)
	out, err := run(t, repoRoot(t), argv...)
	if err != nil {
		t.Fatalf("render %s: %v", vs.name, err)
	}
	r := rendered{set: vs}
	for i, doc := range splitYAML(out) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("%s: document %d: %v\n%s", vs.name, i, err, doc)
		}
		newObj, ok := prototypes[tm.Kind]
		if !ok {
			t.Fatalf("%s: document %d has kind %q, which this test does not know", vs.name, i, tm.Kind)
		}
		if tm.APIVersion != wantAPIVersion[tm.Kind] {
			t.Errorf("%s: %s has apiVersion %q, want %q", vs.name, tm.Kind, tm.APIVersion, wantAPIVersion[tm.Kind])
		}
		obj := newObj()
		if err := decodeStrict(doc, obj); err != nil {
			t.Fatalf("%s: %s document %d does not decode strictly: %v\n%s", vs.name, tm.Kind, i, err, doc)
		}
		r.objects = append(r.objects, object{kind: tm.Kind, meta: objectMeta(obj), obj: obj})
	}
	if len(r.objects) == 0 {
		t.Fatalf("%s: helm template rendered nothing", vs.name)
	}
	return r
}

// decodeStrict decodes one YAML document into obj the way the API server
// does in strict mode: duplicate keys, unknown fields and fields in the wrong
// case (`readOnlyRootFileSystem`) are errors. (encoding/json, behind
// yaml.UnmarshalStrict, matches field names case-insensitively.)
func decodeStrict(doc []byte, obj any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

func splitYAML(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		// drop comment-only documents (helm prints "# Source: ..." lines)
		var content bool
		for _, line := range strings.Split(d, "\n") {
			if s := strings.TrimSpace(line); s != "" && !strings.HasPrefix(s, "#") {
				content = true
				break
			}
		}
		if content {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

func objectMeta(obj any) metav1.ObjectMeta {
	switch o := obj.(type) {
	case metav1.Object:
		return metav1.ObjectMeta{Name: o.GetName(), Namespace: o.GetNamespace(), Labels: o.GetLabels(), Annotations: o.GetAnnotations()}
	}
	return metav1.ObjectMeta{}
}

func (r rendered) byKind(kind string) []object {
	var out []object
	for _, o := range r.objects {
		if o.kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// pod is the pod template of a workload (or a bare Pod).
type pod struct {
	owner  string // Kind/name
	labels map[string]string
	spec   corev1.PodSpec
}

func (r rendered) pods() []pod {
	var out []pod
	for _, o := range r.objects {
		name := o.kind + "/" + o.meta.Name
		switch w := o.obj.(type) {
		case *appsv1.Deployment:
			out = append(out, pod{name, w.Spec.Template.Labels, w.Spec.Template.Spec})
		case *appsv1.StatefulSet:
			out = append(out, pod{name, w.Spec.Template.Labels, w.Spec.Template.Spec})
		case *batchv1.Job:
			out = append(out, pod{name, w.Spec.Template.Labels, w.Spec.Template.Spec})
		case *corev1.Pod:
			out = append(out, pod{name, w.Labels, w.Spec})
		}
	}
	return out
}

func (p pod) containers() []corev1.Container {
	return append(slices.Clone(p.spec.InitContainers), p.spec.Containers...)
}

// renderAll renders every value set once, in parallel subtests.
func renderAll(t *testing.T, check func(t *testing.T, r rendered)) {
	t.Helper()
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			t.Parallel()
			check(t, render(t, vs))
		})
	}
}

func TestChartLint(t *testing.T) {
	t.Parallel()
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			t.Parallel()
			argv := append([]string{helmBin(t), "lint", "--strict", chartDir(t), "--namespace", namespace,
				"--kube-version", kubeVersion}, helmArgs(t, vs)...)
			if out, err := run(t, repoRoot(t), argv...); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}

// TestChartObjects is the main check: one render per value set, every
// property checked on every object.
func TestChartObjects(t *testing.T) {
	t.Parallel()
	renderAll(t, func(t *testing.T, r rendered) {
		checkNamesAndLabels(t, r)
		checkPodSecurity(t, r)
		checkServicePods(t, r)
		checkProbesAndDrain(t, r)
		checkEnv(t, r)
		checkSelectors(t, r)
		checkStatefulSets(t, r)
		checkHooks(t, r)
		checkNetworkPolicies(t, r)
		checkOpsPorts(t, r)
		checkRBAC(t, r)
	})
}

// opsEnv names the variable of each service's ops listener; the worker's
// only listener is its ops listener.
var opsEnv = map[string]string{"api": "API_OPS_ADDR", "psp": "PSP_OPS_ADDR", "worker": "WORKER_LISTEN_ADDR"}

// checkOpsPorts: /livez, /readyz and /metrics are on each service's ops
// listener: the probes and the Prometheus annotation use its port, which
// is not the api's or the psp's client port, no Service publishes it, and
// the NetworkPolicies let only metricsFrom (Prometheus) reach it.
func checkOpsPorts(t *testing.T, r rendered) {
	opsPorts := map[string]int32{} // component -> ops port
	for _, o := range r.byKind("Deployment") {
		d := o.obj.(*appsv1.Deployment)
		for _, c := range d.Spec.Template.Spec.Containers {
			what := "Deployment/" + d.Name + " container " + c.Name
			env, ok := opsEnv[c.Name]
			if !ok {
				continue
			}
			addr, ok := envValue(c, env)
			if !ok {
				t.Errorf("%s: %s is not set", what, env)
				continue
			}
			var port int32
			fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &port)
			opsPorts[c.Name] = port
			portOf := map[string]int32{}
			for _, p := range c.Ports {
				portOf[p.Name] = p.ContainerPort
			}
			if c.Name != "worker" && (portOf["ops"] != port || portOf["http"] == port) {
				t.Errorf("%s: ports %v, want ops = %s (%d), apart from http", what, portOf, env, port)
			}
			for _, pr := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
				if pr == nil || pr.HTTPGet == nil {
					continue // checkProbesAndDrain reports it
				}
				if got := pr.HTTPGet.Port; portOf[got.StrVal] != port {
					t.Errorf("%s: probe %s on port %s, want the ops port %d", what, pr.HTTPGet.Path, got.String(), port)
				}
			}
			if ann := d.Spec.Template.Annotations["prometheus.io/port"]; ann != "" && ann != fmt.Sprint(port) {
				t.Errorf("%s: prometheus.io/port %s, want the ops port %d", what, ann, port)
			}
		}
	}
	for _, o := range r.byKind("Service") {
		svc := o.obj.(*corev1.Service)
		comp := svc.Labels["app.kubernetes.io/component"]
		for _, p := range svc.Spec.Ports {
			if comp != "worker" && opsPorts[comp] != 0 && (p.Port == opsPorts[comp] || p.TargetPort.IntVal == opsPorts[comp] || p.TargetPort.StrVal == "ops") {
				t.Errorf("Service %s publishes the ops port %d", svc.Name, opsPorts[comp])
			}
		}
	}
	if r.set.name == "no-networkpolicy" || r.set.name == "minimal" {
		return
	}
	for _, o := range r.byKind("NetworkPolicy") {
		np := o.obj.(*networkingv1.NetworkPolicy)
		comp := np.Spec.PodSelector.MatchLabels["app.kubernetes.io/component"]
		ops, ok := opsPorts[comp]
		if !ok {
			continue
		}
		allowed := false
		for _, rule := range np.Spec.Ingress {
			for _, p := range rule.Ports {
				if p.Port == nil || p.Port.IntVal != ops {
					continue
				}
				allowed = true
				// the default metricsFrom: any pod of the cluster, no ipBlock, never "anyone"
				if len(rule.From) == 0 || slices.ContainsFunc(rule.From, func(peer networkingv1.NetworkPolicyPeer) bool {
					return peer.NamespaceSelector == nil || peer.IPBlock != nil
				}) {
					t.Errorf("NetworkPolicy %s: ops port %d open to %+v, want only networkPolicy.metricsFrom", np.Name, ops, rule.From)
				}
			}
		}
		if !allowed {
			t.Errorf("NetworkPolicy %s: nothing may reach the ops port %d (Prometheus cannot scrape)", np.Name, ops)
		}
	}
}

var standardLabels = []string{
	"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component",
	"app.kubernetes.io/version", "app.kubernetes.io/managed-by", "app.kubernetes.io/part-of", "helm.sh/chart",
}

func checkLabels(t *testing.T, what string, labels map[string]string) {
	t.Helper()
	for _, k := range standardLabels {
		if labels[k] == "" {
			t.Errorf("%s: label %s is missing", what, k)
		}
	}
	want := map[string]string{
		"app.kubernetes.io/name": "oncepay", "app.kubernetes.io/instance": release,
		"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/part-of": "oncepay",
	}
	for k, v := range want {
		if labels[k] != "" && labels[k] != v {
			t.Errorf("%s: label %s=%q, want %q", what, k, labels[k], v)
		}
	}
	for k, v := range labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			t.Errorf("%s: label key %q: %v", what, k, errs)
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("%s: label %s value %q: %v", what, k, v, errs)
		}
	}
}

func checkNamesAndLabels(t *testing.T, r rendered) {
	seen := map[string]bool{}
	for _, o := range r.objects {
		what := o.kind + "/" + o.meta.Name
		if seen[what] {
			t.Errorf("%s is rendered twice", what)
		}
		seen[what] = true
		check := validation.IsDNS1123Subdomain
		if o.kind == "Service" {
			check = validation.IsDNS1035Label
		}
		if errs := check(o.meta.Name); len(errs) > 0 {
			t.Errorf("%s: name: %v", what, errs)
		}
		checkLabels(t, what, o.meta.Labels)
	}
	for _, p := range r.pods() {
		checkLabels(t, p.owner+" pod template", p.labels)
	}
}

// oncepayImage reports whether image is one of the three service images.
func oncepayImage(image string) (svc string, ok bool) {
	repo, _, _ := strings.Cut(image[strings.LastIndex(image, "/")+1:], ":")
	switch repo {
	case "api", "worker", "psp":
		return repo, strings.Contains(image, "oncepay/")
	}
	return "", false
}

func checkPodSecurity(t *testing.T, r rendered) {
	for _, p := range r.pods() {
		sc := p.spec.SecurityContext
		switch {
		case sc == nil:
			t.Errorf("%s: no pod securityContext", p.owner)
			continue
		case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
			t.Errorf("%s: runAsNonRoot is not true", p.owner)
		case sc.RunAsUser == nil || *sc.RunAsUser == 0:
			t.Errorf("%s: runAsUser must be a non-zero uid (the kubelet cannot check a named USER)", p.owner)
		case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
			t.Errorf("%s: seccompProfile is not RuntimeDefault", p.owner)
		}
		// the one exception: a RabbitMQ cluster's nodes find each other
		// through the API server (checked in TestChartHA)
		peerDiscovery := p.owner == "StatefulSet/"+release+"-rabbitmq" && p.spec.ServiceAccountName == release+"-rabbitmq"
		if !peerDiscovery && (p.spec.AutomountServiceAccountToken == nil || *p.spec.AutomountServiceAccountToken) {
			t.Errorf("%s: automountServiceAccountToken is not false (no pod talks to the API server)", p.owner)
		}
		for _, c := range p.containers() {
			what := p.owner + " container " + c.Name
			csc := c.SecurityContext
			if csc == nil {
				t.Errorf("%s: no securityContext", what)
				continue
			}
			if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
				t.Errorf("%s: allowPrivilegeEscalation is not false", what)
			}
			if csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem {
				t.Errorf("%s: readOnlyRootFilesystem is not true", what)
			}
			if csc.Privileged != nil && *csc.Privileged {
				t.Errorf("%s: privileged", what)
			}
			if csc.Capabilities == nil || !slices.Contains(csc.Capabilities.Drop, "ALL") || len(csc.Capabilities.Add) > 0 {
				t.Errorf("%s: capabilities must drop ALL and add none, got %+v", what, csc.Capabilities)
			}
			// set on the container too, so that it holds whatever the pod says
			if csc.SeccompProfile == nil || csc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("%s: seccompProfile is not RuntimeDefault on the container", what)
			}
			if csc.RunAsNonRoot == nil || !*csc.RunAsNonRoot {
				t.Errorf("%s: runAsNonRoot is not true on the container", what)
			}
			uid := sc.RunAsUser
			if csc.RunAsUser != nil {
				uid = csc.RunAsUser
			}
			if _, ok := oncepayImage(c.Image); ok && (uid == nil || *uid != 65532) {
				t.Errorf("%s: oncepay images run as 65532 (distroless nonroot), got %v", what, uid)
			}
			if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
				t.Errorf("%s: no memory limit", what)
			}
			if _, ok := c.Resources.Requests[corev1.ResourceMemory]; !ok {
				t.Errorf("%s: no memory request", what)
			}
			if _, tag, ok := strings.Cut(c.Image[strings.LastIndex(c.Image, "/")+1:], ":"); !ok || tag == "" || tag == "latest" {
				t.Errorf("%s: image %q needs an explicit tag other than latest", what, c.Image)
			}
		}
		// read-only root: a writable /tmp for every oncepay container
		for _, c := range p.spec.Containers {
			if _, ok := oncepayImage(c.Image); ok && len(c.Command) == 0 && !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/tmp" }) {
				t.Errorf("%s container %s: no writable /tmp", p.owner, c.Name)
			}
		}
	}
}

// checkServicePods: the three services exist with the replicas of the values.
func checkServicePods(t *testing.T, r rendered) {
	want := map[string]bool{"api": false, "worker": false, "psp": false}
	for _, o := range r.byKind("Deployment") {
		d := o.obj.(*appsv1.Deployment)
		c := d.Spec.Template.Labels["app.kubernetes.io/component"]
		if _, ok := want[c]; !ok {
			t.Errorf("unexpected Deployment %s (component %q)", d.Name, c)
			continue
		}
		want[c] = true
		svc, ok := oncepayImage(d.Spec.Template.Spec.Containers[0].Image)
		if !ok || svc != c {
			t.Errorf("Deployment %s runs image %q, want oncepay/%s", d.Name, d.Spec.Template.Spec.Containers[0].Image, c)
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas < 1 {
			t.Errorf("Deployment %s: replicas %v", d.Name, d.Spec.Replicas)
		}
	}
	for c, ok := range want {
		if !ok {
			t.Errorf("no Deployment for %s", c)
		}
	}
	// each waits (TCP, through the Services, so only for ready pods) for
	// what it cannot start without, instead of crash-looping
	wantWait := map[string][]string{
		"api":    {"oncepay-redis:6379", "oncepay-postgres:5432"},
		"worker": {"oncepay-redis:6379", "oncepay-postgres:5432", "oncepay-rabbitmq:5672", "oncepay-psp:8090"},
		"psp":    {"oncepay-postgres:5432"},
	}
	for _, o := range r.byKind("Deployment") {
		d := o.obj.(*appsv1.Deployment)
		c := d.Spec.Template.Labels["app.kubernetes.io/component"]
		init := d.Spec.Template.Spec.InitContainers
		if len(init) != 1 || !slices.Equal(init[0].Command, append([]string{"/probe", "wait", "-timeout", "10m"}, wantWait[c]...)) {
			t.Errorf("Deployment %s: init containers %+v, want /probe wait for %v", d.Name, init, wantWait[c])
		}
	}
	if r.set.name == "default" {
		for _, o := range r.byKind("Deployment") {
			d := o.obj.(*appsv1.Deployment)
			wantReplicas := map[string]int32{"api": 2, "worker": 2, "psp": 1}[d.Spec.Template.Labels["app.kubernetes.io/component"]]
			if *d.Spec.Replicas != wantReplicas {
				t.Errorf("Deployment %s: replicas %d, want %d", d.Name, *d.Spec.Replicas, wantReplicas)
			}
		}
	}
}

func envValue(c corev1.Container, names ...string) (string, bool) {
	for _, e := range c.Env {
		if slices.Contains(names, e.Name) {
			return e.Value, true
		}
	}
	return "", false
}

func checkProbesAndDrain(t *testing.T, r rendered) {
	for _, o := range r.byKind("Deployment") {
		d := o.obj.(*appsv1.Deployment)
		spec := d.Spec.Template.Spec
		for _, c := range spec.Containers {
			what := "Deployment/" + d.Name + " container " + c.Name
			for _, pr := range []struct {
				name  string
				probe *corev1.Probe
				path  string
			}{{"liveness", c.LivenessProbe, "/livez"}, {"readiness", c.ReadinessProbe, "/readyz"}, {"startup", c.StartupProbe, "/livez"}} {
				if pr.probe == nil || pr.probe.HTTPGet == nil || pr.probe.HTTPGet.Path != pr.path {
					t.Errorf("%s: %s probe must GET %s, got %+v", what, pr.name, pr.path, pr.probe)
				}
			}
			graceText, ok := envValue(c, "SHUTDOWN_GRACE", "PSP_SHUTDOWN_GRACE")
			if !ok {
				t.Errorf("%s: no SHUTDOWN_GRACE", what)
				continue
			}
			grace, err := parseSeconds(graceText)
			if err != nil {
				t.Errorf("%s: SHUTDOWN_GRACE %q: %v", what, graceText, err)
				continue
			}
			var preStop int64
			if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
				if c.Lifecycle.PreStop.Sleep == nil {
					t.Errorf("%s: preStop must be a sleep action (distroless has no shell)", what)
				} else {
					preStop = c.Lifecycle.PreStop.Sleep.Seconds
				}
			}
			if c.Name != "worker" && preStop == 0 {
				t.Errorf("%s: serves traffic but has no preStop sleep to let endpoints update", what)
			}
			var tg int64 = 30 // the Kubernetes default
			if spec.TerminationGracePeriodSeconds != nil {
				tg = *spec.TerminationGracePeriodSeconds
			}
			if tg <= preStop+grace {
				t.Errorf("%s: terminationGracePeriodSeconds %d must exceed preStop %ds + SHUTDOWN_GRACE %ds", what, tg, preStop, grace)
			}
		}
	}
}

func parseSeconds(s string) (int64, error) {
	var n int64
	if _, err := fmt.Sscanf(s, "%ds", &n); err != nil || fmt.Sprintf("%ds", n) != s {
		return 0, fmt.Errorf("want whole seconds like 15s")
	}
	return n, nil
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// requiredEnv is what each service refuses to start without (its config).
var requiredEnv = map[string][]string{
	"api":    {"API_LISTEN_ADDR", "REDIS_URL", "DATABASE_URL", "AMQP_URL", "API_MERCHANT_KEYS"},
	"worker": {"WORKER_LISTEN_ADDR", "REDIS_URL", "DATABASE_URL", "AMQP_URL", "PSP_URL"},
	"psp":    {"PSP_LISTEN_ADDR", "PSP_DATABASE_URL", "PSP_ADMIN_ADDR", "PSP_ADMIN_TOKEN"},
}

func checkEnv(t *testing.T, r rendered) {
	secrets := map[string]map[string][]byte{}
	for _, o := range r.byKind("Secret") {
		secrets[o.meta.Name] = o.obj.(*corev1.Secret).Data
	}
	configMaps := map[string]bool{}
	for _, o := range r.byKind("ConfigMap") {
		configMaps[o.meta.Name] = true
	}
	existing := r.set.name == "existing-secret"
	for _, p := range r.pods() {
		for _, c := range p.containers() {
			what := p.owner + " container " + c.Name
			defined := map[string]bool{}
			for _, e := range c.Env {
				for _, m := range envRef.FindAllStringSubmatch(e.Value, -1) {
					if !defined[m[1]] {
						t.Errorf("%s: %s refers to $(%s), which is not defined before it (Kubernetes would leave it unexpanded)", what, e.Name, m[1])
					}
				}
				if defined[e.Name] {
					t.Errorf("%s: %s is set twice", what, e.Name)
				}
				defined[e.Name] = true
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && !existing {
					ref := e.ValueFrom.SecretKeyRef
					data, ok := secrets[ref.Name]
					if !ok {
						t.Errorf("%s: %s reads Secret %q, which the chart does not render", what, e.Name, ref.Name)
					} else if _, ok := data[ref.Key]; !ok {
						t.Errorf("%s: %s reads key %q, which Secret %s lacks", what, e.Name, ref.Key, ref.Name)
					}
				}
			}
			svc, ok := oncepayImage(c.Image)
			if !ok || len(c.Command) > 0 { // the smoke test runs /probe
				continue
			}
			known := serviceEnvNames(t, svc)
			for _, e := range c.Env {
				if !strings.HasPrefix(e.Name, "ONCEPAY_") && !known[e.Name] {
					t.Errorf("%s: sets %s, which services/%s never mentions (typo, or a setting that was renamed?)", what, e.Name, svc)
				}
			}
			if slices.Contains(c.Args, "migrate") {
				if _, ok := envValue(c, "DATABASE_URL"); !ok {
					t.Errorf("%s: migrate without DATABASE_URL", what)
				}
				continue
			}
			for _, name := range requiredEnv[svc] {
				if !defined[name] {
					t.Errorf("%s: %s is required by the %s and not set", what, name, svc)
				}
			}
			for _, name := range []string{"API_LISTEN_ADDR", "WORKER_LISTEN_ADDR", "PSP_LISTEN_ADDR"} {
				if v, ok := envValue(c, name); ok && !strings.HasPrefix(v, "0.0.0.0:") {
					t.Errorf("%s: %s=%q: a pod must listen on all interfaces", what, name, v)
				}
			}
		}
		for _, v := range p.spec.Volumes {
			if v.ConfigMap != nil && !configMaps[v.ConfigMap.Name] {
				t.Errorf("%s: volume %s reads ConfigMap %q, which the chart does not render", p.owner, v.Name, v.ConfigMap.Name)
			}
		}
	}
}

func subset(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func checkSelectors(t *testing.T, r rendered) {
	pods := r.pods()
	podsMatching := func(sel map[string]string) []pod {
		var out []pod
		for _, p := range pods {
			if subset(sel, p.labels) {
				out = append(out, p)
			}
		}
		return out
	}
	for _, o := range r.objects {
		switch w := o.obj.(type) {
		case *appsv1.Deployment:
			if !subset(w.Spec.Selector.MatchLabels, w.Spec.Template.Labels) {
				t.Errorf("Deployment %s: selector %v does not match its pod labels", w.Name, w.Spec.Selector.MatchLabels)
			}
		case *appsv1.StatefulSet:
			if !subset(w.Spec.Selector.MatchLabels, w.Spec.Template.Labels) {
				t.Errorf("StatefulSet %s: selector %v does not match its pod labels", w.Name, w.Spec.Selector.MatchLabels)
			}
		case *corev1.Service:
			// a per-pod Service (a Redis Cluster node's NodePort) also
			// selects by the label the StatefulSet controller sets
			sel := maps.Clone(w.Spec.Selector)
			if pod, ok := sel["statefulset.kubernetes.io/pod-name"]; ok {
				delete(sel, "statefulset.kubernetes.io/pod-name")
				if !strings.HasPrefix(pod, w.Labels["app.kubernetes.io/instance"]+"-") {
					t.Errorf("Service %s: selects pod %q, not one of the release", w.Name, pod)
				}
			}
			matched := podsMatching(sel)
			// a Service must select exactly one workload, never the hook pods
			if len(matched) != 1 {
				var owners []string
				for _, p := range matched {
					owners = append(owners, p.owner)
				}
				t.Errorf("Service %s: selector %v matches %v, want exactly one workload", w.Name, w.Spec.Selector, owners)
				continue
			}
			for _, sp := range w.Spec.Ports {
				if !hasPort(matched[0], sp.TargetPort.String()) {
					t.Errorf("Service %s: targetPort %s is not a port of %s", w.Name, sp.TargetPort.String(), matched[0].owner)
				}
				if sp.NodePort != 0 && w.Spec.Type == corev1.ServiceTypeClusterIP {
					t.Errorf("Service %s: nodePort on a ClusterIP service", w.Name)
				}
			}
		case *policyv1.PodDisruptionBudget:
			if len(podsMatching(w.Spec.Selector.MatchLabels)) != 1 {
				t.Errorf("PodDisruptionBudget %s: selector %v must match exactly one workload", w.Name, w.Spec.Selector.MatchLabels)
			}
		}
	}
	// the api is reachable on a fixed NodePort unless the values say otherwise
	for _, o := range r.byKind("Service") {
		s := o.obj.(*corev1.Service)
		if s.Labels["app.kubernetes.io/component"] == "api" && s.Spec.ClusterIP != corev1.ClusterIPNone && r.set.name == "default" {
			if s.Spec.Type != corev1.ServiceTypeNodePort || s.Spec.Ports[0].NodePort != 30080 {
				t.Errorf("Service %s: want NodePort 30080 by default, got %s %d", s.Name, s.Spec.Type, s.Spec.Ports[0].NodePort)
			}
		}
	}
}

func hasPort(p pod, target string) bool {
	for _, c := range p.spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == target || fmt.Sprint(cp.ContainerPort) == target {
				return true
			}
		}
	}
	return false
}

func checkStatefulSets(t *testing.T, r rendered) {
	headless := map[string]bool{}
	for _, o := range r.byKind("Service") {
		if s := o.obj.(*corev1.Service); s.Spec.ClusterIP == corev1.ClusterIPNone {
			headless[s.Name] = true
		}
	}
	wantImages := map[string]string{"redis": "redis:7", "postgres": "postgres:16", "rabbitmq": "rabbitmq:3-management"}
	got := map[string]bool{}
	for _, o := range r.byKind("StatefulSet") {
		s := o.obj.(*appsv1.StatefulSet)
		c := s.Spec.Template.Labels["app.kubernetes.io/component"]
		got[c] = true
		if img := s.Spec.Template.Spec.Containers[0].Image; img != wantImages[c] {
			t.Errorf("StatefulSet %s: image %q, want the official %q", s.Name, img, wantImages[c])
		}
		if !headless[s.Spec.ServiceName] {
			t.Errorf("StatefulSet %s: serviceName %q is not a rendered headless Service", s.Name, s.Spec.ServiceName)
		}
		if len(s.Spec.VolumeClaimTemplates) != 1 || s.Spec.VolumeClaimTemplates[0].Name != "data" {
			t.Errorf("StatefulSet %s: want one volumeClaimTemplate named data", s.Name)
		}
		mounted := slices.ContainsFunc(s.Spec.Template.Spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "data" })
		if !mounted {
			t.Errorf("StatefulSet %s: the data volume is not mounted", s.Name)
		}
		if c == "redis" {
			args := strings.Join(s.Spec.Template.Spec.Containers[0].Args, " ")
			for _, want := range []struct{ arg, why string }{
				{"--appendonly yes", "Redis without AOF"},
				{"--hash-max-listpack-value 2048", "boundary records would not fit in a listpack (docs/deploy.md, \"Redis memory\")"},
				{"--rdbcompression no", "AOF rewrites would spend ~2.4x the CPU compressing records that barely compress (docs/PERFORMANCE.md)"},
			} {
				if !strings.Contains(args, want.arg) {
					t.Errorf("StatefulSet %s: no %s: %s: %v", s.Name, want.arg, want.why, s.Spec.Template.Spec.Containers[0].Args)
				}
			}
			c := s.Spec.Template.Spec.Containers[0]
			if limit, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
				t.Errorf("StatefulSet %s: Redis without a memory limit", s.Name)
			} else {
				checkRedisMemoryArgs(t, "StatefulSet "+s.Name, c.Args, limit.Value())
			}
		}
	}
	for c := range wantImages {
		if !got[c] {
			t.Errorf("no StatefulSet for %s", c)
		}
	}
}

func checkHooks(t *testing.T, r rendered) {
	var jobs []object
	for _, o := range r.byKind("Job") {
		if o.meta.Labels["app.kubernetes.io/component"] == "redis-cluster-init" && isHA(r) {
			continue // TestChartHA
		}
		jobs = append(jobs, o)
	}
	if r.set.name == "minimal" {
		if len(jobs) != 0 {
			t.Errorf("migrate.enabled=false still renders %d Job(s)", len(jobs))
		}
	} else {
		if len(jobs) != 1 {
			t.Fatalf("want one migration Job, got %d", len(jobs))
		}
		j := jobs[0].obj.(*batchv1.Job)
		if hooks := strings.Split(j.Annotations["helm.sh/hook"], ","); !slices.Contains(hooks, "post-install") || !slices.Contains(hooks, "pre-upgrade") {
			t.Errorf("Job %s: helm.sh/hook=%q, want post-install,pre-upgrade", j.Name, j.Annotations["helm.sh/hook"])
		}
		spec := j.Spec.Template.Spec
		if len(spec.InitContainers) != 1 || !strings.HasPrefix(strings.Join(spec.InitContainers[0].Command, " "), "/probe wait") ||
			!strings.HasSuffix(strings.Join(spec.InitContainers[0].Command, " "), "-postgres:5432") {
			t.Errorf("Job %s: want an init container waiting for postgres, got %+v", j.Name, spec.InitContainers)
		}
		if spec.RestartPolicy != corev1.RestartPolicyNever || !slices.Equal(spec.Containers[0].Args, []string{"migrate"}) {
			t.Errorf("Job %s: want `api migrate` with restartPolicy Never", j.Name)
		}
	}
	var tests int
	for _, o := range r.byKind("Pod") {
		if o.meta.Annotations["helm.sh/hook"] == "test" {
			tests++
			p := o.obj.(*corev1.Pod)
			if cmd := strings.Join(p.Spec.Containers[0].Command, " "); !strings.HasPrefix(cmd, "/probe smoke") {
				t.Errorf("test Pod %s: command %q, want /probe smoke", p.Name, cmd)
			}
		} else {
			t.Errorf("Pod %s is not a helm test hook", o.meta.Name)
		}
	}
	if tests != 1 {
		t.Errorf("want one helm test Pod, got %d", tests)
	}
	if r.set.name == "minimal" {
		for _, o := range r.byKind("Deployment") {
			d := o.obj.(*appsv1.Deployment)
			if d.Name == release+"-api" {
				if v, _ := envValue(d.Spec.Template.Spec.Containers[0], "API_MIGRATE_ON_START"); v != "true" {
					t.Errorf("without the migration Job the api must migrate on start, API_MIGRATE_ON_START=%q", v)
				}
			}
		}
	}
}

func checkNetworkPolicies(t *testing.T, r rendered) {
	nps := r.byKind("NetworkPolicy")
	if r.set.name == "no-networkpolicy" || r.set.name == "minimal" {
		if len(nps) != 0 {
			t.Errorf("networkPolicy.enabled=false still renders %d NetworkPolicies", len(nps))
		}
		return
	}
	var deny bool
	covered := map[string]bool{}
	for _, o := range nps {
		np := o.obj.(*networkingv1.NetworkPolicy)
		if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			t.Errorf("NetworkPolicy %s: policyTypes %v, want Ingress and Egress", np.Name, np.Spec.PolicyTypes)
		}
		sel := np.Spec.PodSelector.MatchLabels
		if sel["app.kubernetes.io/component"] == "" {
			if len(np.Spec.Ingress) == 0 && sel["app.kubernetes.io/instance"] == release {
				deny = true
			}
			continue
		}
		matched := false
		for _, p := range r.pods() {
			if subset(sel, p.labels) {
				matched = true
				covered[p.owner] = true
			}
		}
		if !matched {
			t.Errorf("NetworkPolicy %s selects no pod of the chart", np.Name)
		}
		// every peer a policy names must be a pod of the chart
		for _, rule := range np.Spec.Egress {
			for _, peer := range rule.To {
				if peer.PodSelector != nil && peer.NamespaceSelector == nil && !slices.ContainsFunc(r.pods(), func(p pod) bool { return subset(peer.PodSelector.MatchLabels, p.labels) }) {
					t.Errorf("NetworkPolicy %s: egress peer %v matches no pod", np.Name, peer.PodSelector.MatchLabels)
				}
			}
		}
	}
	if !deny {
		t.Error("no default-deny NetworkPolicy for the release's pods")
	}
	for _, p := range r.pods() {
		if !covered[p.owner] {
			t.Errorf("%s: no NetworkPolicy allows its traffic (default deny would cut it off)", p.owner)
		}
	}
}

func checkRBAC(t *testing.T, r rendered) {
	var roles []object
	for _, o := range r.byKind("Role") {
		if o.meta.Name == release+"-rabbitmq-peer-discovery" && isHA(r) {
			continue // TestChartHA
		}
		roles = append(roles, o)
	}
	if r.set.name == "minimal" {
		if len(roles) != 0 || len(r.byKind("RoleBinding")) != 0 || len(r.byKind("ServiceAccount")) != 0 {
			t.Error("faultDriver.rbac.create=false still renders RBAC objects")
		}
		return
	}
	if len(roles) != 1 {
		t.Fatalf("want one Role (fault driver), got %d", len(roles))
	}
	got := map[string][]string{}
	for _, rule := range roles[0].obj.(*rbacv1.Role).Rules {
		if !slices.Equal(rule.APIGroups, []string{""}) {
			t.Errorf("Role rule %+v: only the core API group is needed", rule)
		}
		for _, res := range rule.Resources {
			got[res] = append(got[res], rule.Verbs...)
		}
	}
	want := map[string][]string{"pods": {"get", "list", "watch", "delete"}, "pods/eviction": {"create"}}
	for res, verbs := range got {
		if !slices.Equal(verbs, want[res]) {
			t.Errorf("Role grants %v on %s, want %v", verbs, res, want[res])
		}
	}
	if len(got) != len(want) {
		t.Errorf("Role covers %v, want exactly pods and pods/eviction", got)
	}
	isPeerDiscovery := func(o object) bool { return isHA(r) && o.meta.Labels["app.kubernetes.io/component"] == "rabbitmq" }
	rbs := slices.DeleteFunc(r.byKind("RoleBinding"), isPeerDiscovery)
	sas := slices.DeleteFunc(r.byKind("ServiceAccount"), isPeerDiscovery)
	if len(rbs) != 1 || len(sas) != 1 {
		t.Fatalf("want one RoleBinding and one ServiceAccount, got %d and %d", len(rbs), len(sas))
	}
	rb := rbs[0].obj.(*rbacv1.RoleBinding)
	if rb.RoleRef.Name != roles[0].meta.Name || len(rb.Subjects) != 1 || rb.Subjects[0].Name != sas[0].meta.Name || rb.Subjects[0].Namespace != namespace {
		t.Errorf("RoleBinding %s does not bind Role %s to ServiceAccount %s/%s: %+v", rb.Name, roles[0].meta.Name, namespace, sas[0].meta.Name, rb)
	}
}

// TestChartDeterministic: apart from the generated Secret, two renders are
// identical; a pod template that differed would roll the pods on every
// upgrade, state services included.
func TestChartDeterministic(t *testing.T) {
	t.Parallel()
	first, second := render(t, valueSets[0]), render(t, valueSets[0])
	if len(first.objects) != len(second.objects) {
		t.Fatalf("renders differ in length: %d and %d objects", len(first.objects), len(second.objects))
	}
	for i, o := range first.objects {
		if o.kind == "Secret" {
			continue
		}
		a, _ := yaml.Marshal(o.obj)
		b, _ := yaml.Marshal(second.objects[i].obj)
		if string(a) != string(b) {
			t.Errorf("%s/%s differs between two renders of the same values:\n%s\n---\n%s", o.kind, o.meta.Name, a, b)
		}
	}
}

var alnum32 = regexp.MustCompile(`^[A-Za-z0-9]{32}$`)

func TestChartSecrets(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		vs       valueSet
		wantKeys map[string]string // merchant -> key; empty: generated
	}{
		{vs: valueSets[0]},
		{vs: valueSets[2], wantKeys: map[string]string{"merchant_a": "key-a-0123456789abcdef", "merchant_b": "key-b-0123456789abcdef"}},
	} {
		t.Run(tt.vs.name, func(t *testing.T) {
			t.Parallel()
			r := render(t, tt.vs)
			secrets := r.byKind("Secret")
			if len(secrets) != 1 {
				t.Fatalf("want one Secret, got %d", len(secrets))
			}
			s := secrets[0].obj.(*corev1.Secret)
			if s.Annotations["helm.sh/resource-policy"] != "keep" {
				t.Errorf("Secret %s: want helm.sh/resource-policy: keep (the PVCs outlive the release)", s.Name)
			}
			for _, k := range []string{"postgres-password", "psp-db-password", "psp-admin-token", "rabbitmq-password", "redis-password"} {
				if !alnum32.Match(s.Data[k]) {
					t.Errorf("Secret %s: %s = %q, want 32 generated alphanumerics", s.Name, k, s.Data[k])
				}
			}
			var pairs []string
			for _, m := range []string{"merchant_a", "merchant_b"} {
				key := string(s.Data[strings.ReplaceAll(m, "_", "-")+"-key"])
				if want, ok := tt.wantKeys[m]; ok && key != want {
					t.Errorf("%s key = %q, want the one from values %q", m, key, want)
				}
				if _, ok := tt.wantKeys[m]; !ok && !alnum32.MatchString(key) {
					t.Errorf("%s key = %q, want 32 generated alphanumerics", m, key)
				}
				pairs = append(pairs, m+"="+key)
			}
			if got, want := string(s.Data["api-merchant-keys"]), strings.Join(pairs, ","); got != want {
				t.Errorf("api-merchant-keys = %q, want %q", got, want)
			}
		})
	}
}

// TestChartExistingSecret: with existingSecret the chart renders no Secret
// and every reference points at the named one.
func TestChartExistingSecret(t *testing.T) {
	t.Parallel()
	r := render(t, valueSet{name: "existing-secret", set: []string{"existingSecret=my-oncepay"}})
	if n := len(r.byKind("Secret")); n != 0 {
		t.Errorf("existingSecret set: %d Secrets rendered, want 0", n)
	}
	for _, p := range r.pods() {
		for _, c := range p.containers() {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name != "my-oncepay" {
					t.Errorf("%s %s: reads Secret %q, want my-oncepay", p.owner, e.Name, e.ValueFrom.SecretKeyRef.Name)
				}
			}
		}
	}
}

// TestChartSchemaRejects: values.schema.json stops mistakes before Kubernetes sees them.
func TestChartSchemaRejects(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		set  string
		want string
	}{
		{"latest tag", "image.tag=latest", "tag"},
		{"unknown key", "replicas=3", "replicas"},
		{"typo in a component", "api.replica=3", "replica"},
		{"short merchant key", "merchants.merchant_a=short", "merchant_a"},
		{"bad merchant id", "merchants.Merchant-A=0123456789abcdef0123", "Merchant-A"},
		{"nodePort out of range", "api.service.nodePort=8080", "nodePort"},
		{"bad log level", "worker.logLevel=verbose", "logLevel"},
		{"bad env name", "api.env.not-a-name=1", "env"},
		{"listpack value below Redis's default", "redis.hashMaxListpackValue=32", "minimum"},
		{"listpack value removed", "redis.hashMaxListpackValue=null", "hashMaxListpackValue"},
		{"maxmemory removed", "redis.maxmemory=null", "maxmemory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			flag := "--set-string"
			if strings.Contains(tt.set, "nodePort") || strings.Contains(tt.set, "replica") || strings.Contains(tt.set, "ListpackValue") ||
				strings.HasSuffix(tt.set, "=null") {
				flag = "--set"
			}
			_, err := run(t, repoRoot(t), helmBin(t), "template", release, chartDir(t), "--kube-version", kubeVersion, flag, tt.set)
			if err == nil {
				t.Fatalf("helm template --set %s: rendered, want a schema error", tt.set)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error does not mention %q:\n%v", tt.want, err)
			}
		})
	}
}

// TestChartRedisMemoryChecked: the chart refuses to render a redis.maxmemory
// above 75% of redis.resources.limits.memory, saying why and what to do. Its
// verdict and its byte counts agree with redisMemory and Kubernetes's
// quantity parser; a rendered maxmemory passes checkRedisMemoryArgs.
func TestChartRedisMemoryChecked(t *testing.T) {
	t.Parallel()
	trackInputs(t, "deploy/helm/oncepay")
	for _, tt := range []struct {
		name      string
		maxmemory string // --set-string redis.maxmemory; "": the default 192mb
		limit     string // --set redis.resources.limits.memory; "": the default 256Mi
		over      bool   // more than 75%: refused
	}{
		{"default", "", "", false},
		{"exactly 75%", "192mb", "256Mi", false},
		{"over 75%", "200mb", "256Mi", true},
		{"1gb under the default limit", "1gb", "", true},
		{"1gb raised with the limit", "1gb", "2Gi", false},
		{"upper case", "1536MB", "2Gi", false},
		{"1000^n under 1024^n", "750m", "1Gi", false},
		{"1000^n at exactly 75%", "750m", "1G", false},
		{"1000^n just over 75%", "751m", "1G", true},
		{"bytes at exactly 75%", "805306368", "1Gi", false},
		{"bytes a byte over 75%", "805306369", "1Gi", true},
		{"limit in bytes (a number)", "805306369", "1073741824", true},
		{"fractional limit", "192mb", "0.25Gi", false},
		{"fractional limit under", "192mb", "0.24Gi", true},
		{"no limit: nothing to stay under", "1gb", "null", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			vs := valueSet{name: "redis-memory-" + tt.name}
			maxmemory, limit := "192mb", "256Mi"
			if tt.maxmemory != "" {
				maxmemory = tt.maxmemory
				vs.setString = []string{"redis.maxmemory=" + maxmemory}
			}
			if tt.limit != "" {
				limit = tt.limit
				vs.set = []string{"redis.resources.limits.memory=" + limit}
			}
			var mm, l int64 // bytes, as the Go parsers read them
			if limit != "null" {
				var err error
				if mm, err = redisMemory(maxmemory); err != nil {
					t.Fatal(err)
				}
				q := resource.MustParse(limit)
				l = q.Value()
				if over := float64(mm) > maxmemoryShare*float64(l); over != tt.over {
					t.Fatalf("the Go parsers say %d bytes over 75%% of %d bytes is %v; the table says %v", mm, l, over, tt.over)
				}
			}
			if !tt.over {
				s := redisStatefulSet(t, render(t, vs))
				c := s.Spec.Template.Spec.Containers[0]
				if l, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
					checkRedisMemoryArgs(t, "StatefulSet "+s.Name, c.Args, l.Value())
				}
				return
			}
			_, err := run(t, repoRoot(t), append([]string{helmBin(t), "template", release, chartDir(t),
				"--namespace", namespace, "--kube-version", kubeVersion}, helmArgs(t, vs)...)...)
			if err == nil {
				t.Fatalf("maxmemory %s under a %s limit: rendered, want it refused", maxmemory, limit)
			}
			for _, want := range []string{
				fmt.Sprintf("redis.maxmemory %q (%d bytes", maxmemory, mm),
				fmt.Sprintf("(%d bytes, ", l),
				"more than 75% of redis.resources.limits.memory",
				"allocator overhead, AOF buffers and the copy-on-write of an AOF rewrite's fork",
				"OOM-killed into a crash loop instead of refusing writes",
				"Raise redis.resources.limits.memory together with redis.maxmemory",
				`docs/deploy.md, "Redis memory"`,
			} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not say %q:\n%v", want, err)
				}
			}
		})
	}
}

// TestChartRedisMemoryRefused: a maxmemory Redis cannot read or reads as no
// limit, and a limit the chart cannot read, fail the render with the
// template's own error, which says what is wrong and what to do
// (values.schema.json only checks the type, so it does not answer first
// with a bare pattern).
func TestChartRedisMemoryRefused(t *testing.T) {
	t.Parallel()
	trackInputs(t, "deploy/helm/oncepay")
	for _, tt := range []struct {
		name string
		vs   valueSet
		want []string
	}{
		{"not a Redis memory value", valueSet{setString: []string{"redis.maxmemory=abc"}},
			[]string{`redis.maxmemory: "abc" is not a Redis memory value (bytes, or a number with kb, mb, gb, k, m or g)`}},
		{"Kubernetes units", valueSet{setString: []string{"redis.maxmemory=192Mi"}},
			[]string{`redis.maxmemory: "192Mi" is not a Redis memory value`}},
		{"a fraction", valueSet{set: []string{"redis.maxmemory=1.5gb"}},
			[]string{`redis.maxmemory: "1.5gb" is not a Redis memory value`}},
		{"empty", valueSet{setString: []string{"redis.maxmemory="}},
			[]string{`redis.maxmemory: "" is not a Redis memory value`}},
		{"0 (no limit)", valueSet{set: []string{"redis.maxmemory=0"}},
			[]string{`redis.maxmemory: "0" means no limit to Redis`, "OOM-kills it, in a crash loop", "75% of redis.resources.limits.memory or less"}},
		{"0mb (no limit)", valueSet{setString: []string{"redis.maxmemory=0mb"}},
			[]string{`redis.maxmemory: "0mb" means no limit to Redis`}},
		{"limit not a quantity", valueSet{set: []string{"redis.resources.limits.memory=lots"}},
			[]string{`redis.resources.limits.memory: "lots" is not a memory quantity`, "Ki, Mi, Gi, Ti, k, M, G or T"}},
		{"limit in exponent form", valueSet{set: []string{"redis.resources.limits.memory=1e9"}},
			[]string{`redis.resources.limits.memory: "1e9" is not a memory quantity`, "no exponent forms"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			argv := append([]string{helmBin(t), "template", release, chartDir(t), "--namespace", namespace,
				"--kube-version", kubeVersion}, helmArgs(t, tt.vs)...)
			_, err := run(t, repoRoot(t), argv...)
			if err == nil {
				t.Fatal("rendered, want it refused")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not say %q:\n%v", want, err)
				}
			}
		})
	}
}

// TestChartRedisMaxmemoryNumber: a maxmemory in plain bytes may be given as
// a number (--set, or a number in a values file, which Helm reads as a
// float64): Redis gets the digits, never an exponent form it cannot read,
// and the 75% check and its message see the same bytes. A number that is
// not whole is refused by values.schema.json.
func TestChartRedisMaxmemoryNumber(t *testing.T) {
	t.Parallel()
	trackInputs(t, "deploy/helm/oncepay")
	for _, vs := range []valueSet{
		{name: "maxmemory-set", set: []string{"redis.maxmemory=805306368", "redis.resources.limits.memory=1Gi"}},
		{name: "maxmemory-set-string", setString: []string{"redis.maxmemory=805306368"}, set: []string{"redis.resources.limits.memory=1Gi"}},
		{name: "maxmemory-values-file", files: []string{"deploy/testdata/values-maxmemory-bytes.yaml"}},
	} {
		t.Run(vs.name, func(t *testing.T) {
			t.Parallel()
			c := redisStatefulSet(t, render(t, vs)).Spec.Template.Spec.Containers[0]
			if got := checkRedisMemoryArgs(t, vs.name, c.Args, 1<<30); got != "805306368" {
				t.Errorf("--maxmemory %q, want the digits 805306368", got)
			}
		})
	}
	// A values file with another maxmemory, in a temporary directory (helm -f
	// splits its argument at commas: no comma in a subtest's name).
	template := func(t *testing.T, maxmemory string) error {
		f := filepath.Join(t.TempDir(), "values.yaml")
		y := "redis:\n  maxmemory: " + maxmemory + "\n  resources: {limits: {memory: 1Gi}}\n"
		if err := os.WriteFile(f, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := run(t, repoRoot(t), helmBin(t), "template", release, chartDir(t),
			"--namespace", namespace, "--kube-version", kubeVersion, "-f", f)
		return err
	}
	t.Run("a number in a values file over 75%", func(t *testing.T) {
		t.Parallel()
		err := template(t, "805306369")
		if err == nil || !strings.Contains(err.Error(), `redis.maxmemory "805306369" (805306369 bytes`) {
			t.Errorf("want the 75%% refusal naming 805306369 in digits, got %v", err)
		}
	})
	t.Run("a number in a values file not whole", func(t *testing.T) {
		t.Parallel()
		err := template(t, "805306368.5")
		if err == nil || !strings.Contains(err.Error(), "maxmemory") {
			t.Errorf("want a schema error about maxmemory, got %v", err)
		}
	})
}

// TestChartRedisBytes: the chart's byte conversions (_redis.tpl) agree with
// redisMemory and with Kubernetes's quantity parser, and read nothing from
// what they do not understand. A copy of the chart renders them into a
// ConfigMap.
func TestChartRedisBytes(t *testing.T) {
	t.Parallel()
	redisIn := []string{"192mb", "1GB", "1536Mb", "100m", "750M", "3g", "2048", "5kb", "5K", "7b", "010"}
	redisBad := []string{"abc", "192Mi", "1.5gb", "-1", "", "mb", "1 mb", "1tb"}
	quantityIn := []any{"256Mi", "1Gi", "0.25Gi", "1.5Mi", ".5Ki", "0.1Ki", "2Ti", "1G", "512k", "750M", "3T", "100", "1.2",
		float64(268435456)} // a number in a values file
	quantityBad := []string{"lots", "1e9", "256MB", "256mi", "Mi", "1 Gi", "-1Gi", "1Pi", "0x10", ""}

	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(chartDir(t))); err != nil {
		t.Fatal(err)
	}
	js := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	conv := func(key, helper string, in any) string {
		return fmt.Sprintf("  %s: {{ $out := list }}{{ range fromJsonArray %q }}{{ $out = append $out (include %q .) }}{{ end }}{{ toJson $out | quote }}\n",
			key, js(in), helper)
	}
	tpl := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bytes}\ndata:\n" +
		conv("redis", "oncepay.redisBytes", redisIn) + conv("redisBad", "oncepay.redisBytes", redisBad) +
		conv("quantity", "oncepay.quantityBytes", quantityIn) + conv("quantityBad", "oncepay.quantityBytes", quantityBad)
	if err := os.WriteFile(filepath.Join(dir, "templates", "zz-bytes-test.yaml"), []byte(tpl), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, repoRoot(t), helmBin(t), "template", release, dir, "--namespace", namespace,
		"--kube-version", kubeVersion, "--show-only", "templates/zz-bytes-test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := decodeStrict(out, &cm); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := func(key string, n int) []string {
		var s []string
		if err := json.Unmarshal([]byte(cm.Data[key]), &s); err != nil || len(s) != n {
			t.Fatalf("%s: %q: want %d results (%v)", key, cm.Data[key], n, err)
		}
		return s
	}
	for i, b := range got("redis", len(redisIn)) {
		want, err := redisMemory(redisIn[i])
		if err != nil {
			t.Fatal(err)
		}
		if b != strconv.FormatInt(want, 10) {
			t.Errorf("oncepay.redisBytes %q = %q, redisMemory says %d", redisIn[i], b, want)
		}
	}
	for i, q := range got("quantity", len(quantityIn)) {
		var want int64
		switch in := quantityIn[i].(type) {
		case string:
			q := resource.MustParse(in)
			want = q.Value()
		case float64:
			want = int64(in)
		}
		if q != strconv.FormatInt(want, 10) {
			t.Errorf("oncepay.quantityBytes %v = %q, Kubernetes says %d", quantityIn[i], q, want)
		}
	}
	for _, bad := range []struct {
		key string
		in  []string
	}{{"redisBad", redisBad}, {"quantityBad", quantityBad}} {
		for i, b := range got(bad.key, len(bad.in)) {
			if b != "" {
				t.Errorf("%s %q = %q, want empty: not a value it reads", bad.key, bad.in[i], b)
			}
		}
	}
}

// TestChartRedisListpack: Redis's hash-max-listpack-value is
// redis.hashMaxListpackValue (2048 unless set), so each boundary record stays
// a listpack.
func TestChartRedisListpack(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		set  []string
		want string
	}{
		{"default", nil, "2048"},
		{"raised", []string{"redis.hashMaxListpackValue=4096"}, "4096"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := render(t, valueSet{name: "listpack-" + tt.name, set: tt.set})
			var found bool
			for _, o := range r.byKind("StatefulSet") {
				s := o.obj.(*appsv1.StatefulSet)
				if s.Spec.Template.Labels["app.kubernetes.io/component"] != "redis" {
					continue
				}
				found = true
				args := s.Spec.Template.Spec.Containers[0].Args
				i := slices.Index(args, "--hash-max-listpack-value")
				if i < 0 || i+1 >= len(args) {
					t.Fatalf("StatefulSet %s: no --hash-max-listpack-value: %v", s.Name, args)
				}
				if args[i+1] != tt.want {
					t.Errorf("StatefulSet %s: --hash-max-listpack-value %s, want %s", s.Name, args[i+1], tt.want)
				}
			}
			if !found {
				t.Fatal("no Redis StatefulSet rendered")
			}
		})
	}
}

// TestChartNotes: NOTES.txt renders and tells how to get in and get the
// keys. helm template does not print NOTES, and helm install --dry-run
// checks kubeVersion against a built-in default; so a copy of the chart
// renders NOTES.txt through tpl into a ConfigMap.
func TestChartNotes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(chartDir(t))); err != nil {
		t.Fatal(err)
	}
	notes, err := os.ReadFile(filepath.Join(dir, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("files/notes.txt", string(notes))
	write("templates/zz-notes-test.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\n"+
		"data:\n  notes: {{ tpl (.Files.Get \"files/notes.txt\") . | quote }}\n")
	for _, vs := range []valueSet{valueSets[0], valueSets[1]} {
		out, err := run(t, repoRoot(t), append([]string{helmBin(t), "template", release, dir, "--namespace", namespace,
			"--kube-version", kubeVersion, "--show-only", "templates/zz-notes-test.yaml"}, helmArgs(t, vs)...)...)
		if err != nil {
			t.Fatal(err)
		}
		var cm corev1.ConfigMap
		if err := decodeStrict(out, &cm); err != nil {
			t.Fatal(err)
		}
		text := cm.Data["notes"]
		want := []string{"get secret oncepay-credentials", "merchant-a-key", "port-forward", "helm test oncepay", "/v1/payments"}
		if vs.name == "default" {
			want = append(want, "nodePort", "create token", "/admin/ledger")
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: NOTES do not mention %q:\n%s", vs.name, w, text)
			}
		}
		if strings.Contains(text, "<no value>") {
			t.Errorf("%s: NOTES contain <no value>:\n%s", vs.name, text)
		}
	}
}
