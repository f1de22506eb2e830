package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte(`{"run_id":"r42","faults":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		return map[string]string{"DATABASE_URL": "postgres://x", "REDIS_URL": "redis://x", "AMQP_URL": "amqp://x", "PSP_ADMIN_TOKEN": "t0ken"}[k]
	}
	got, err := loadConfig([]string{"verify", "-run-dir", dir, "-retry-delays", "1s,5s,15s", "-drain", "30s"}, getenv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := config{
		RunDir: dir, RunID: "r42", PSPAdminURL: "http://127.0.0.1:8092", PSPToken: "t0ken", Queue: "payments.charge",
		RetryDelays: []time.Duration{time.Second, 5 * time.Second, 15 * time.Second}, Drain: 30 * time.Second, Faults: true, Lease: 10 * time.Second,
		DatabaseURL: "postgres://x", RedisMode: "single", RedisURL: "redis://x", AMQPURL: "amqp://x",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("loadConfig (-want +got):\n%s", diff)
	}
}

func TestLoadConfigReportsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := loadConfig([]string{"verify", "-run-dir", t.TempDir(), "-retry-delays", "1s,never", "-drain", "0s", "extra"},
		func(string) string { return "" }, io.Discard)
	if err == nil {
		t.Fatal("loadConfig succeeded")
	}
	for _, want := range []string{"unexpected arguments", `"never" is not a positive duration`, "-drain must be positive",
		"DATABASE_URL is required", "REDIS_URL is required", "AMQP_URL is required", "PSP_ADMIN_TOKEN is required", "run info"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
