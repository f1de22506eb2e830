package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// localReplicas runs `scripts/local env` with LOCAL_PORT_BASE=base and
// LOCAL_TOXIPROXY=toxiproxy and parses the FAULTD_REPLICAS it exports.
func localReplicas(t *testing.T, base, toxiproxy string) map[string]int {
	t.Helper()
	script, err := filepath.Abs("../../../scripts/local")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script, "env")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"ONCEPAY_LOCAL_DIR=" + t.TempDir(), "LOCAL_PORT_BASE=" + base, "LOCAL_TOXIPROXY=" + toxiproxy}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/local env: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "export FAULTD_REPLICAS="); ok {
			rs, err := parseReplicas(strings.Trim(v, "'"))
			if err != nil {
				t.Fatalf("FAULTD_REPLICAS from scripts/local env: %v", err)
			}
			ports := map[string]int{}
			for name, r := range rs {
				ports[name] = r.ServerPort + r.UpstreamPort
			}
			return ports
		}
	}
	t.Fatalf("scripts/local env exports no FAULTD_REPLICAS:\n%s", out)
	return nil
}

// The in-flight probes watch the ports the local runtime's replicas really
// use: the api replicas' own, and the port each worker sends its psp calls
// to, which is its own Toxiproxy proxy when the proxies are on.
func TestLocalRuntimeProbesItsPorts(t *testing.T) {
	t.Parallel()
	direct := localReplicas(t, "9480", "0")
	for name, want := range map[string]int{"api-1": 9480, "api-2": 9482, "worker-1": 9490, "worker-2": 9490} {
		if direct[name] != want {
			t.Errorf("LOCAL_TOXIPROXY=0: %s probes port %d, want %d", name, direct[name], want)
		}
	}
	proxied := localReplicas(t, "9480", "1")
	if proxied["api-1"] != 9480 || proxied["api-2"] != 9482 {
		t.Errorf("LOCAL_TOXIPROXY=1: api ports %d, %d, want 9480, 9482", proxied["api-1"], proxied["api-2"])
	}
	w1, w2 := proxied["worker-1"], proxied["worker-2"]
	if w1 == w2 || w1 < 9510 || w1 > 9519 || w2 < 9510 || w2 > 9519 {
		t.Errorf("LOCAL_TOXIPROXY=1: workers probe ports %d and %d, want each its own psp proxy (base+30..39)", w1, w2)
	}
}
