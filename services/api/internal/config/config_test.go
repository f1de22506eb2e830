package config_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oncepay/oncepay/pkg/service/pgpool"
	"github.com/oncepay/oncepay/services/api/internal/config"
)

const (
	keyA = "sk_test_merchant_a_0123456789"
	keyB = "sk_test_merchant_b_0123456789"
)

// env returns a getenv over base with the overrides applied ("" unsets).
func env(overrides map[string]string) func(string) string {
	m := map[string]string{
		"REDIS_URL":         "redis://127.0.0.1:6379/0",
		"DATABASE_URL":      "postgres://u:secret@127.0.0.1:5432/db",
		"AMQP_URL":          "amqp://guest:guest@127.0.0.1:5672/",
		"API_MERCHANT_KEYS": "merchant_a=" + keyA + ",merchant_b=" + keyB,
	}
	for k, v := range overrides {
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

func TestLoadServeDefaults(t *testing.T) {
	t.Parallel()
	got, err := config.LoadServe(env(nil), "host-1")
	if err != nil {
		t.Fatal(err)
	}
	want := config.Serve{
		ListenAddr:        "127.0.0.1:8080",
		OpsAddr:           "127.0.0.1:8084",
		RedisMode:         "single",
		RedisURL:          "redis://127.0.0.1:6379/0",
		DatabaseURL:       "postgres://u:secret@127.0.0.1:5432/db",
		AMQPURL:           "amqp://guest:guest@127.0.0.1:5672/",
		Merchants:         map[string]string{"merchant_a": keyA, "merchant_b": keyB},
		RateBurst:         1,
		MaxInFlight:       config.DefaultMaxInFlight,
		PG:                pgpool.Timeouts{Statement: 10 * time.Second, Lock: 2 * time.Second, IdleInTransaction: 30 * time.Second},
		IdemLease:         10 * time.Second,
		IdemRetention:     24 * time.Hour,
		IdemTimeout:       500 * time.Millisecond,
		IdemEndRetry:      10 * time.Second,
		IdemStrategy:      "oncepay",
		AMQPExchange:      "payments",
		AMQPQueue:         "payments.charge",
		AMQPDeliveryLimit: 20,
		RelayInterval:     time.Second,
		RelayAge:          3 * time.Second,
		SweepInterval:     10 * time.Second,
		SweepAge:          time.Minute,
		SweepLimit:        3,
		ShutdownGrace:     15 * time.Second,
		Instance:          "host-1",
		LogLevel:          slog.LevelInfo,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadServe() mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadServeOverrides(t *testing.T) {
	t.Parallel()
	got, err := config.LoadServe(env(map[string]string{
		"API_LISTEN_ADDR": ":0", "IDEM_LEASE": "2s", "IDEM_RETENTION": "1h", "IDEM_TIMEOUT": "100ms",
		"AMQP_EXCHANGE": "payments-test", "OUTBOX_RELAY_INTERVAL": "250ms", "OUTBOX_RELAY_AGE": "0s",
		"SHUTDOWN_GRACE": "5s", "SHUTDOWN_DELAY": "1s", "API_MIGRATE_ON_START": "true",
		"API_INSTANCE": "api-7", "LOG_LEVEL": "debug", "IDEM_STRATEGY": "get-then-set",
		"API_MERCHANT_KEYS": " m-1 = 0123456789abcdef ", "IDEM_END_RETRY": "0s",
		"OUTBOX_SWEEP_INTERVAL": "0s", "OUTBOX_SWEEP_AGE": "5s", "OUTBOX_SWEEP_LIMIT": "7",
		"PG_STATEMENT_TIMEOUT": "3s", "PG_LOCK_TIMEOUT": "0s", "PG_IDLE_IN_TRANSACTION_TIMEOUT": "1m",
	}), "host-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ListenAddr != ":0" || got.IdemLease != 2*time.Second || got.RelayAge != 0 ||
		got.ShutdownDelay != time.Second || !got.MigrateOnStart || got.Instance != "api-7" ||
		got.LogLevel != slog.LevelDebug || got.AMQPExchange != "payments-test" || got.IdemStrategy != "get-then-set" ||
		got.IdemEndRetry != 0 || got.SweepInterval != 0 || got.SweepAge != 5*time.Second || got.SweepLimit != 7 ||
		got.PG != (pgpool.Timeouts{Statement: 3 * time.Second, IdleInTransaction: time.Minute}) {
		t.Errorf("overrides not applied: %+v", got)
	}
	if diff := cmp.Diff(map[string]string{"m-1": "0123456789abcdef"}, got.Merchants); diff != "" {
		t.Errorf("Merchants mismatch (-want +got):\n%s", diff)
	}
}

// TestLoadServeReportsEveryProblem checks that one call lists all problems.
func TestLoadServeReportsEveryProblem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{
			name: "everything required missing",
			env:  map[string]string{"REDIS_URL": "", "DATABASE_URL": "", "AMQP_URL": "", "API_MERCHANT_KEYS": ""},
			want: []string{
				"REDIS_URL: required, not set",
				"DATABASE_URL: required, not set",
				"AMQP_URL: required, not set",
				"API_MERCHANT_KEYS: required, not set (merchant_id=api_key,merchant_id=api_key)",
			},
		},
		{
			name: "bad values everywhere",
			env: map[string]string{
				"API_LISTEN_ADDR": "8080", "REDIS_URL": "http://x", "AMQP_URL": "http://x",
				"IDEM_LEASE": "ten", "IDEM_RETENTION": "-1h", "IDEM_TIMEOUT": "0s",
				"AMQP_EXCHANGE": "amq.topic", "OUTBOX_RELAY_INTERVAL": "1", "OUTBOX_RELAY_AGE": "-1s",
				"SHUTDOWN_GRACE": "x", "SHUTDOWN_DELAY": "-2s", "API_MIGRATE_ON_START": "yes please",
				"API_INSTANCE": "has space", "LOG_LEVEL": "loud",
				"IDEM_END_RETRY": "-1s", "OUTBOX_SWEEP_INTERVAL": "-1s", "OUTBOX_SWEEP_AGE": "0s", "OUTBOX_SWEEP_LIMIT": "0",
			},
			want: []string{
				`IDEM_LEASE: "ten" is not a duration such as 500ms, 10s or 24h`,
				"IDEM_RETENTION: -1h0m0s must be positive",
				"IDEM_TIMEOUT: 0s must be positive",
				"IDEM_END_RETRY: -1s must not be negative",
				`OUTBOX_RELAY_INTERVAL: "1" is not a duration such as 500ms, 10s or 24h`,
				"OUTBOX_RELAY_AGE: -1s must not be negative",
				"OUTBOX_SWEEP_INTERVAL: -1s must not be negative",
				"OUTBOX_SWEEP_AGE: 0s must be positive",
				`OUTBOX_SWEEP_LIMIT: "0" is not a positive integer`,
				`SHUTDOWN_GRACE: "x" is not a duration such as 500ms, 10s or 24h`,
				"SHUTDOWN_DELAY: -2s must not be negative",
				`API_MIGRATE_ON_START: "yes please" is not a boolean (true or false)`,
				`API_INSTANCE: "has space" must be 1-64 visible ASCII characters (default: the host name)`,
				`LOG_LEVEL: "loud" is not one of debug, info, warn, error`,
				`API_LISTEN_ADDR: "8080" is not host:port: address 8080: missing port in address`,
				"REDIS_URL: redis: invalid URL scheme: http",
				"AMQP_URL: AMQP scheme must be either 'amqp://' or 'amqps://'",
				`AMQP_EXCHANGE: "amq.topic": the amq. prefix is reserved by RabbitMQ`,
			},
		},
		{
			name: "bad redis mode",
			env:  map[string]string{"REDIS_MODE": "ring"},
			want: []string{`REDIS_MODE: "ring": want one of single, cluster, sentinel`},
		},
		{
			name: "ha urls",
			env: map[string]string{"REDIS_MODE": "sentinel", "REDIS_URL": "redis://:s3cret@127.0.0.1:26379?addr=127.0.0.1:26380",
				"AMQP_URL": "amqp://u:p@mq1:5672/,amqp://u:s3cret@mq2:5672/"},
			want: []string{
				"REDIS_URL: sentinel mode needs master_name=NAME in the URL's query",
				"AMQP_URL: URL 2 has other credentials than URL 1: the nodes of one cluster share them",
			},
		},
		{
			name: "inconsistent durations",
			env:  map[string]string{"IDEM_LEASE": "1s", "IDEM_TIMEOUT": "2s", "IDEM_RETENTION": "500ms", "SHUTDOWN_GRACE": "1s", "SHUTDOWN_DELAY": "1s"},
			want: []string{
				"IDEM_TIMEOUT: 2s must be shorter than IDEM_LEASE (1s)",
				"IDEM_RETENTION: 500ms must be at least IDEM_LEASE (1s)",
				"SHUTDOWN_DELAY: 1s must be shorter than SHUTDOWN_GRACE (1s)",
			},
		},
		{
			name: "merchant keys",
			env: map[string]string{"API_MERCHANT_KEYS": "a=0123456789abcdef,,b,c d=0123456789abcdef,e=short," +
				"a=fedcba9876543210,f=0123456789abcdef,g=0123456789abcde\x01"},
			want: []string{
				"API_MERCHANT_KEYS: entry 2 is empty",
				"API_MERCHANT_KEYS: entry 3 has no '=' (want merchant_id=api_key)",
				`API_MERCHANT_KEYS: entry 4: merchant id "c d" must be 1-64 characters of [A-Za-z0-9_-]`,
				`API_MERCHANT_KEYS: entry 5: the key of merchant "e" is shorter than 16 characters`,
				`API_MERCHANT_KEYS: merchant "a" appears more than once`,
				`API_MERCHANT_KEYS: merchants "a" and "f" share one key`,
				`API_MERCHANT_KEYS: entry 8: the key of merchant "g" has a character that is not visible ASCII`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := config.LoadServe(env(tt.env), "host-1")
			var cerr *config.Error
			if !errors.As(err, &cerr) {
				t.Fatalf("LoadServe() error = %v, want a *config.Error", err)
			}
			if diff := cmp.Diff(tt.want, cerr.Problems); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProblemsNeverShowKeys: a rejected key must not leak into the error.
func TestProblemsNeverShowKeys(t *testing.T) {
	t.Parallel()
	secret := "sk_live_do_not_print_me"
	_, err := config.LoadServe(env(map[string]string{"API_MERCHANT_KEYS": "a=" + secret + ",b=" + secret + ",c=short_" + "x"}), "h")
	if err == nil {
		t.Fatal("LoadServe() accepted a shared key")
	}
	if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "short_x") {
		t.Errorf("error %q shows an API key", err)
	}
}

// TestProblemsNeverShowURLPasswords: a URL that does not parse must not
// leak its password (or a piece of it) into the error.
func TestProblemsNeverShowURLPasswords(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, value string }{
		{"REDIS_URL", "redis://user:s3cr%zzet@127.0.0.1:6379/0"},
		{"REDIS_URL", "redis://user:s3cr/et@127.0.0.1:6379/0"},
		{"REDIS_URL", "redis://user:s3cr\tet@127.0.0.1:6379/0"},
		{"AMQP_URL", "amqp://user:s3cr%zzet@127.0.0.1:5672/"},
		{"AMQP_URL", "amqp://user:s3cr/et@127.0.0.1:5672/"},
		{"DATABASE_URL", "postgres://user:s3cr%zzet@127.0.0.1:5432/db"},
		{"DATABASE_URL", "postgres://user:s3cr/et@127.0.0.1:5432/db"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" "+tt.value, func(t *testing.T) {
			t.Parallel()
			_, err := config.LoadServe(env(map[string]string{tt.name: tt.value}), "h")
			if err == nil || !strings.Contains(err.Error(), tt.name) {
				t.Fatalf("LoadServe() = %v, want a problem naming %s", err, tt.name)
			}
			if strings.Contains(err.Error(), "s3cr") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

func TestLoadMigrateNeedsOnlyTheDatabase(t *testing.T) {
	t.Parallel()
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return "postgres://u@127.0.0.1/db"
		}
		return ""
	}
	got, err := config.LoadMigrate(getenv, "h")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(config.Migrate{DatabaseURL: "postgres://u@127.0.0.1/db", Instance: "h", LogLevel: slog.LevelInfo}, got); diff != "" {
		t.Errorf("LoadMigrate() mismatch (-want +got):\n%s", diff)
	}
	if _, err := config.LoadMigrate(func(string) string { return "" }, "h"); err == nil {
		t.Error("LoadMigrate() without DATABASE_URL succeeded")
	}
}

// API_PPROF_ADDR is off unless set, and must be host:port.
func TestLoadServePprofAddr(t *testing.T) {
	t.Parallel()
	got, err := config.LoadServe(env(nil), "host-1")
	if err != nil || got.PprofAddr != "" {
		t.Errorf("default PprofAddr = %q, %v; want off", got.PprofAddr, err)
	}
	got, err = config.LoadServe(env(map[string]string{"API_PPROF_ADDR": "127.0.0.1:6060"}), "host-1")
	if err != nil || got.PprofAddr != "127.0.0.1:6060" {
		t.Errorf("PprofAddr = %q, %v; want 127.0.0.1:6060", got.PprofAddr, err)
	}
	_, err = config.LoadServe(env(map[string]string{"API_PPROF_ADDR": "6060"}), "host-1")
	if err == nil || !strings.Contains(err.Error(), "API_PPROF_ADDR") {
		t.Errorf("API_PPROF_ADDR=6060: err = %v, want a problem naming API_PPROF_ADDR", err)
	}
}

// TestLoadServeMaxInFlight: API_MAX_INFLIGHT is a count of requests, 0
// (off) or more; anything else is a problem naming it.
func TestLoadServeMaxInFlight(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value   string
		want    int
		wantErr bool
	}{
		{"", config.DefaultMaxInFlight, false},
		{"0", 0, false},
		{"200", 200, false},
		{"-1", config.DefaultMaxInFlight, true},
		{"many", config.DefaultMaxInFlight, true},
	}
	for _, tt := range tests {
		got, err := config.LoadServe(env(map[string]string{"API_MAX_INFLIGHT": tt.value}), "h")
		if gotErr := err != nil && strings.Contains(err.Error(), "API_MAX_INFLIGHT"); gotErr != tt.wantErr || got.MaxInFlight != tt.want {
			t.Errorf("API_MAX_INFLIGHT=%q: got %d, %v; want %d, problem %v", tt.value, got.MaxInFlight, err, tt.want, tt.wantErr)
		}
	}
}
