package deploy_test

import (
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestKindPortMappings: every NodePort the kind install exposes is mapped to
// the host in deploy/kind/cluster.yaml (for clusters the script creates).
func TestKindPortMappings(t *testing.T) {
	t.Parallel()
	var cluster struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
		Nodes      []struct {
			Role              string `json:"role"`
			ExtraPortMappings []struct {
				ContainerPort int32  `json:"containerPort"`
				HostPort      int32  `json:"hostPort"`
				ListenAddress string `json:"listenAddress"`
				Protocol      string `json:"protocol"`
			} `json:"extraPortMappings"`
		} `json:"nodes"`
	}
	readYAML(t, "deploy/kind/cluster.yaml", &cluster)
	if cluster.Kind != "Cluster" || cluster.APIVersion != "kind.x-k8s.io/v1alpha4" || len(cluster.Nodes) != 1 {
		t.Fatalf("cluster.yaml: want one node of a kind.x-k8s.io/v1alpha4 Cluster, got %+v", cluster)
	}
	var mapped []int32
	for _, m := range cluster.Nodes[0].ExtraPortMappings {
		if m.ContainerPort != m.HostPort || m.ListenAddress != "127.0.0.1" {
			t.Errorf("mapping %+v: want the same port on 127.0.0.1", m)
		}
		mapped = append(mapped, m.ContainerPort)
	}
	r := render(t, valueSets[4]) // kind
	var exposed int
	for _, o := range r.byKind("Service") {
		for _, p := range o.obj.(*corev1.Service).Spec.Ports {
			if p.NodePort == 0 {
				continue
			}
			exposed++
			if !slices.Contains(mapped, p.NodePort) {
				t.Errorf("Service %s: nodePort %d is not in deploy/kind/cluster.yaml", o.meta.Name, p.NodePort)
			}
		}
	}
	if exposed != len(mapped) {
		t.Errorf("the kind values expose %d NodePorts, cluster.yaml maps %d", exposed, len(mapped))
	}
}

// TestScriptsParse: the shell scripts at least parse (bash -n).
func TestScriptsParse(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"deploy/build-images", "deploy/tools", "deploy/compose/run", "deploy/kind/run",
		"deploy/observability/prometheus-standin/build", "deploy/helm/oncepay/files/postgres-initdb.sh",
	} {
		p := filepath.Join(repoRoot(t), s)
		if !isExecutable(p) {
			t.Errorf("%s is not executable", s)
		}
		if out, err := exec.Command("bash", "-n", p).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", s, err, out)
		}
		// shellcheck where installed (it is not a required tool)
		if sc, err := exec.LookPath("shellcheck"); err == nil {
			if out, err := exec.Command(sc, "-S", "warning", p).CombinedOutput(); err != nil {
				t.Errorf("shellcheck %s: %v\n%s", s, err, out)
			}
		}
	}
}
