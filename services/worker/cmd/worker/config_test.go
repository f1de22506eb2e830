package main

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oncepay/oncepay/pkg/service/pgpool"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func required() map[string]string {
	return map[string]string{
		"REDIS_URL":    "redis://127.0.0.1:6379/3",
		"DATABASE_URL": "postgres://u:p@127.0.0.1:5432/db?sslmode=disable",
		"AMQP_URL":     "amqp://u:p@127.0.0.1:5672/",
		"PSP_URL":      "http://127.0.0.1:8090",
	}
}

func TestLoadConfigDefaults(t *testing.T) {
	got, err := loadConfig(envOf(required()), "host-1")
	if err != nil {
		t.Fatal(err)
	}
	want := config{
		ListenAddr: "127.0.0.1:8081", RedisMode: "single", RedisURL: "redis://127.0.0.1:6379/3",
		DatabaseURL: "postgres://u:p@127.0.0.1:5432/db?sslmode=disable", AMQPURL: "amqp://u:p@127.0.0.1:5672/",
		PSPURL: "http://127.0.0.1:8090", Exchange: "payments", Queue: "payments.charge",
		Prefetch: 16, Concurrency: 8, AckDelay: 20 * time.Millisecond, RetryDelays: []time.Duration{time.Second, 5 * time.Second, 30 * time.Second},
		DeliveryLimit: 20, ReconnectInterval: time.Second, ReconnectAttempts: 300,
		Lease: 15 * time.Second, Retention: 24 * time.Hour, IdemTimeout: 500 * time.Millisecond,
		PSPTimeout: 5 * time.Second, EndRetry: 5 * time.Second, ShutdownGrace: 20 * time.Second, Instance: "host-1",
		LogLevel: slog.LevelInfo, Strategy: "oncepay",
		ReconcileAfter: 5 * time.Minute, ReconcileInterval: 30 * time.Second, ReconcileBatch: 100,
		MaxHold: time.Minute, // four leases
		PG:      pgpool.Timeouts{Statement: 10 * time.Second, Lock: 2 * time.Second, IdleInTransaction: 30 * time.Second},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

func TestLoadConfigOverrides(t *testing.T) {
	env := required()
	for k, v := range map[string]string{
		"WORKER_LISTEN_ADDR": "127.0.0.1:0", "AMQP_EXCHANGE": "ex", "AMQP_QUEUE": "q",
		"WORKER_PREFETCH": "4", "WORKER_CONCURRENCY": "2", "WORKER_RETRY_DELAYS": "100ms, 300ms,1s",
		"AMQP_DELIVERY_LIMIT": "5", "IDEM_LEASE": "2s", "IDEM_RETENTION": "1h",
		"IDEM_TIMEOUT": "200ms", "PSP_TIMEOUT": "1s", "SHUTDOWN_GRACE": "3s", "WORKER_INSTANCE": "w1",
		"LOG_LEVEL": "debug", "AMQP_RECONNECT_INTERVAL": "250ms", "AMQP_RECONNECT_ATTEMPTS": "7",
		"IDEM_STRATEGY": "oncepay", "IDEM_END_RETRY": "0s", "WORKER_MAX_HOLD": "90s",
		"PG_STATEMENT_TIMEOUT": "1s", "PG_LOCK_TIMEOUT": "0", "PG_IDLE_IN_TRANSACTION_TIMEOUT": "5s",
	} {
		env[k] = v
	}
	got, err := loadConfig(envOf(env), "host")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]time.Duration{100 * time.Millisecond, 300 * time.Millisecond, time.Second}, got.RetryDelays); diff != "" {
		t.Errorf("retry delays (-want +got):\n%s", diff)
	}
	if got.Instance != "w1" || got.Prefetch != 4 || got.Concurrency != 2 || got.LogLevel != slog.LevelDebug ||
		got.ReconnectAttempts != 7 || got.Lease != 2*time.Second || got.Queue != "q" || got.Strategy != "oncepay" ||
		got.EndRetry != 0 || got.MaxHold != 90*time.Second ||
		got.PG != (pgpool.Timeouts{Statement: time.Second, IdleInTransaction: 5 * time.Second}) {
		t.Errorf("config = %+v", got)
	}
}

func TestLoadConfigReportsEveryProblem(t *testing.T) {
	env := map[string]string{
		"DATABASE_URL": "::not a url", "AMQP_URL": "http://x", "PSP_URL": "ftp://x",
		"WORKER_PREFETCH": "0", "WORKER_CONCURRENCY": "x", "WORKER_RETRY_DELAYS": "5s,1s",
		"IDEM_LEASE": "soon", "SHUTDOWN_GRACE": "-1s", "LOG_LEVEL": "loud", "WORKER_INSTANCE": "",
		"IDEM_STRATEGY": "yolo", "IDEM_END_RETRY": "-1s", "WORKER_MAX_HOLD": "0s", "PG_LOCK_TIMEOUT": "-1s",
	}
	_, err := loadConfig(envOf(env), "")
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"REDIS_URL is required", "DATABASE_URL is not a valid URL", "AMQP_URL is not a valid URL",
		"PSP_URL is not a valid URL", "WORKER_PREFETCH", "WORKER_CONCURRENCY", "WORKER_RETRY_DELAYS must be strictly increasing",
		"IDEM_LEASE", "SHUTDOWN_GRACE must be positive", "LOG_LEVEL", "WORKER_INSTANCE", "IDEM_END_RETRY must not be negative",
		"WORKER_MAX_HOLD must be positive", "PG_LOCK_TIMEOUT",
		`IDEM_STRATEGY "yolo": `,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "::not a url") {
		t.Errorf("error echoes a URL: %v", err)
	}
}

func TestLoadConfigRelations(t *testing.T) {
	tests := []struct {
		name, key, value, want string
	}{
		{"more handlers than prefetch", "WORKER_CONCURRENCY", "32", "WORKER_CONCURRENCY 32 exceeds WORKER_PREFETCH 16"},
		{"timeout not below lease", "IDEM_TIMEOUT", "15s", "IDEM_TIMEOUT 15s must be shorter than IDEM_LEASE"},
		{"retention below lease", "IDEM_RETENTION", "1s", "IDEM_RETENTION 1s must not be shorter than IDEM_LEASE"},
		{"sub-millisecond retry", "WORKER_RETRY_DELAYS", "1500us", "whole number of milliseconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := required()
			env[tt.key] = tt.value
			_, err := loadConfig(envOf(env), "h")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// WORKER_PPROF_ADDR is off unless set, and must be host:port.
func TestLoadConfigPprofAddr(t *testing.T) {
	env := required()
	got, err := loadConfig(envOf(env), "host")
	if err != nil || got.PprofAddr != "" {
		t.Errorf("default PprofAddr = %q, %v; want off", got.PprofAddr, err)
	}
	env["WORKER_PPROF_ADDR"] = "127.0.0.1:6061"
	got, err = loadConfig(envOf(env), "host")
	if err != nil || got.PprofAddr != "127.0.0.1:6061" {
		t.Errorf("PprofAddr = %q, %v; want 127.0.0.1:6061", got.PprofAddr, err)
	}
	env["WORKER_PPROF_ADDR"] = "6061"
	if _, err := loadConfig(envOf(env), "host"); err == nil || !strings.Contains(err.Error(), "WORKER_PPROF_ADDR") {
		t.Errorf("WORKER_PPROF_ADDR=6061: err = %v, want a problem naming it", err)
	}
}

func TestLoadConfigHATopologies(t *testing.T) {
	env := required()
	env["REDIS_MODE"] = "cluster"
	env["REDIS_URL"] = "redis://127.0.0.1:7000?addr=127.0.0.1:7001"
	env["AMQP_URL"] = "amqp://u:p@mq1:5672/,amqp://u:p@mq2:5672/"
	got, err := loadConfig(envOf(env), "host")
	if err != nil {
		t.Fatal(err)
	}
	if got.RedisMode != "cluster" {
		t.Errorf("RedisMode = %q, want cluster", got.RedisMode)
	}

	env["REDIS_MODE"] = "ring"
	env["AMQP_URL"] = "amqp://u:s3cret@mq1:5672/a,amqp://u:s3cret@mq2:5672/b"
	_, err = loadConfig(envOf(env), "host")
	for _, want := range []string{`REDIS_MODE "ring": want one of single, cluster, sentinel`, `AMQP_URL is not a valid URL: URL 2 names vhost "b"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	env["REDIS_MODE"] = "cluster"
	env["REDIS_URL"] = "redis://:s3cret@127.0.0.1:7000/3"
	_, err = loadConfig(envOf(env), "host")
	if err == nil || !strings.Contains(err.Error(), "REDIS_URL is not a valid URL: a Redis Cluster has database 0 only") {
		t.Errorf("cluster URL with a database: error %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error quotes a password: %v", err)
	}
}
