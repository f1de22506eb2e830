package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/process"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadConfigReportsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := loadConfig(env(map[string]string{"FAULTD_WAIT_IN_FLIGHT": "soon", "FAULTD_REPLICAS": "api-1=api:sideways:80",
		"FAULTD_RESTART_TIMEOUT": "-1s"}))
	if err == nil {
		t.Fatal("loadConfig succeeded with a bad environment")
	}
	for _, want := range []string{"FAULTD_RUN_DIR is required", "FAULTD_EVENTS is required",
		"FAULTD_HARNESS is required", "REDIS_URL is required", "FAULTD_WAIT_IN_FLIGHT", "FAULTD_RESTART_TIMEOUT",
		"probe must be server or upstream"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	for runtime, want := range map[string]string{"podman": `RUNTIME "podman": want local, compose or kind`,
		"kind": `FAULTD_KUBE_KILL "gently": want sigkill-delete, sigkill or delete`} {
		_, err := loadConfig(env(map[string]string{"RUNTIME": runtime, "FAULTD_KUBE_KILL": "gently",
			"FAULTD_EVENTS": "/tmp/f.jsonl", "REDIS_URL": "redis://127.0.0.1:1/0"}))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("RUNTIME=%s: error %v, want %q", runtime, err, want)
		}
	}
}

// TestLoadConfigContainerRuntimes: compose and kind need no harness and no
// local state directory, have their own defaults, and get the container
// backends.
func TestLoadConfigContainerRuntimes(t *testing.T) {
	t.Parallel()
	base := map[string]string{"FAULTD_EVENTS": "/tmp/faults.jsonl", "REDIS_URL": "redis://:pw@127.0.0.1:26379/0"}
	inContainer := map[string]process.Replica{
		"api-1":    {Program: "api", ServerPort: 8080},
		"api-2":    {Program: "api", ServerPort: 8080},
		"worker-1": {Program: "worker", UpstreamPort: 8090},
		"worker-2": {Program: "worker", UpstreamPort: 8090},
	}
	for _, tt := range []struct {
		env     map[string]string
		want    config
		backend string
	}{
		{
			env:     map[string]string{"RUNTIME": "compose"},
			want:    config{Runtime: "compose", Topology: "single", ComposeProject: "oncepay", Docker: "docker"},
			backend: "*container.Docker",
		},
		{
			env: map[string]string{"RUNTIME": "compose", "FAULTD_COMPOSE_PROJECT": "other", "FAULTD_DOCKER": "/usr/bin/docker",
				"FAULTD_RESTART_TIMEOUT": "90s"},
			want:    config{Runtime: "compose", Topology: "single", ComposeProject: "other", Docker: "/usr/bin/docker", RestartTimeout: 90 * time.Second},
			backend: "*container.Docker",
		},
		{
			env: map[string]string{"RUNTIME": "kind", "FAULTD_KUBECTL": "/opt/kubectl", "FAULTD_KUBE_CONTEXT": "kind-lab"},
			want: config{Runtime: "kind", Topology: "single", Kubectl: "/opt/kubectl", KubeContext: "kind-lab", KubeNamespace: "oncepay",
				KubeRelease: "oncepay", KubeKill: "sigkill-delete"},
			backend: "*container.Kube",
		},
		{
			env:     map[string]string{"RUNTIME": "kind", "FAULTD_KUBE_NAMESPACE": "pay", "FAULTD_KUBE_RELEASE": "p", "FAULTD_KUBE_KILL": "delete"},
			want:    config{Runtime: "kind", Topology: "single", Kubectl: "kubectl", KubeNamespace: "pay", KubeRelease: "p", KubeKill: "delete"},
			backend: "*container.Kube",
		},
	} {
		e := map[string]string{}
		for k, v := range base {
			e[k] = v
		}
		for k, v := range tt.env {
			e[k] = v
		}
		got, err := loadConfig(env(e))
		if err != nil {
			t.Errorf("%v: %v", tt.env, err)
			continue
		}
		want := tt.want
		want.ListenAddr, want.EventsPath, want.RedisURL = "127.0.0.1:8099", base["FAULTD_EVENTS"], base["REDIS_URL"]
		want.RedisMode = "single"
		want.WaitInFlight, want.Replicas = 2*time.Second, inContainer
		if want.RestartTimeout == 0 {
			want.RestartTimeout = 5 * time.Minute
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%v: loadConfig (-want +got):\n%s", tt.env, diff)
		}
		if b := fmt.Sprintf("%T", newBackend(got, nil)); b != tt.backend {
			t.Errorf("%v: backend %s, want %s", tt.env, b, tt.backend)
		}
	}
}

func TestParseReplicas(t *testing.T) {
	t.Parallel()
	got, err := parseReplicas(defaultReplicas["local"])
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]process.Replica{
		"api-1":    {Program: "api", ServerPort: 8080},
		"api-2":    {Program: "api", ServerPort: 8082},
		"worker-1": {Program: "worker", UpstreamPort: 8090},
		"worker-2": {Program: "worker", UpstreamPort: 8090},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseReplicas (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"worker-1", "worker-2"}, names(got, "worker")); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
}

func TestRunServesAndStops(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var stdout, stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"faultd"}, env(map[string]string{
			"FAULTD_LISTEN_ADDR": addr, "FAULTD_RUN_DIR": dir, "FAULTD_EVENTS": filepath.Join(dir, "faults.jsonl"),
			"FAULTD_HARNESS": "/bin/false", "REDIS_URL": "redis://127.0.0.1:1/0",
		}), &stdout, &stderr)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := http.Get(fmt.Sprintf("http://%s/readyz", addr))
		if err == nil && res.StatusCode == 200 {
			res.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("faultd never became ready: %v\n%s", err, stdout.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	res, err := http.Get(fmt.Sprintf("http://%s/v1/schedule?duration=3m", addr))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET /v1/schedule: %v %v", res, err)
	}
	res.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

// The network faults need the local runtime's Toxiproxy: TOXIPROXY_URL is
// read there only (compose and kind have no proxies).
func TestLoadConfigToxiproxyOnLocalOnly(t *testing.T) {
	t.Parallel()
	base := map[string]string{"FAULTD_EVENTS": "/tmp/f.jsonl", "REDIS_URL": "redis://127.0.0.1:1/0",
		"FAULTD_RUN_DIR": "/tmp/run", "FAULTD_HARNESS": "/bin/false", "TOXIPROXY_URL": "http://127.0.0.1:8109"}
	for runtime, want := range map[string]string{"local": "http://127.0.0.1:8109", "compose": "", "kind": ""} {
		e := map[string]string{"RUNTIME": runtime}
		for k, v := range base {
			e[k] = v
		}
		c, err := loadConfig(env(e))
		if err != nil {
			t.Fatalf("%s: %v", runtime, err)
		}
		if c.ToxiproxyURL != want {
			t.Errorf("%s: ToxiproxyURL %q, want %q", runtime, c.ToxiproxyURL, want)
		}
	}
}
