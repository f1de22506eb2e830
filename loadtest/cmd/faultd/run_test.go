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
	_, err := loadConfig(env(map[string]string{"RUNTIME": "kind", "FAULTD_WAIT_IN_FLIGHT": "soon", "FAULTD_REPLICAS": "api-1=api:sideways:80"}))
	if err == nil {
		t.Fatal("loadConfig succeeded with a bad environment")
	}
	for _, want := range []string{`RUNTIME "kind": not yet available`, "FAULTD_RUN_DIR is required", "FAULTD_EVENTS is required",
		"FAULTD_HARNESS is required", "REDIS_URL is required", "FAULTD_WAIT_IN_FLIGHT", "probe must be server or upstream"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestParseReplicas(t *testing.T) {
	t.Parallel()
	got, err := parseReplicas(defaultReplicas)
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
