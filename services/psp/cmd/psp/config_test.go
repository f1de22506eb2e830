package main

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/pkg/service/pgpool"
	"github.com/oncepay/oncepay/services/psp/internal/faults"
)

func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	now := time.Unix(1700000000, 42)
	tests := []struct {
		name string
		vars map[string]string
		want config
	}{
		{
			name: "defaults",
			vars: map[string]string{"PSP_DATABASE_URL": "postgres://u:p@db:5432/psp"},
			want: config{
				ListenAddr:     "127.0.0.1:8090",
				OpsAddr:        "127.0.0.1:8091",
				DatabaseURL:    "postgres://u:p@db:5432/psp",
				PG:             pgpool.Defaults(),
				Knobs:          faults.Knobs{LatencyMS: 20, LatencyJitterMS: 10, Idempotency: true, Seed: now.UnixNano()},
				ShutdownGrace:  10 * time.Second,
				MigrateOnStart: true,
				LogLevel:       slog.LevelInfo,
			},
		},
		{
			name: "everything set",
			vars: map[string]string{
				"PSP_LISTEN_ADDR": ":9000", "PSP_OPS_ADDR": ":9001", "PSP_DATABASE_URL": "postgres://db/psp",
				"PSP_ADMIN_ADDR": ":9002", "PSP_ADMIN_TOKEN": "0123456789abcdef",
				"PSP_LATENCY": "1s", "PSP_LATENCY_JITTER": "0", "PSP_FAIL_BEFORE_RATE": "0.1",
				"PSP_FAIL_AFTER_RATE": "0.2", "PSP_ERROR_RATE": "1", "PSP_IDEMPOTENCY": "false",
				"PSP_SEED": "-3", "PSP_SHUTDOWN_GRACE": "2s", "PSP_MIGRATE_ON_START": "0", "LOG_LEVEL": "debug",
				"PSP_PG_STATEMENT_TIMEOUT": "1s", "PSP_PG_LOCK_TIMEOUT": "0", "PSP_PG_IDLE_IN_TRANSACTION_TIMEOUT": "5s",
			},
			want: config{
				ListenAddr:  ":9000",
				OpsAddr:     ":9001",
				AdminAddr:   ":9002",
				AdminToken:  "0123456789abcdef",
				DatabaseURL: "postgres://db/psp",
				PG:          pgpool.Timeouts{Statement: time.Second, IdleInTransaction: 5 * time.Second},
				Knobs: faults.Knobs{LatencyMS: 1000, LatencyJitterMS: 0, FailBeforeRate: 0.1, FailAfterRate: 0.2,
					ErrorRate: 1, Idempotency: false, Seed: -3},
				ShutdownGrace:  2 * time.Second,
				MigrateOnStart: false,
				LogLevel:       slog.LevelDebug,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := loadConfig(env(tt.vars), now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadConfigReportsEveryProblem(t *testing.T) {
	t.Parallel()
	vars := map[string]string{
		"PSP_LATENCY":          "fast",
		"PSP_LATENCY_JITTER":   "1500us",
		"PSP_FAIL_BEFORE_RATE": "2",
		"PSP_FAIL_AFTER_RATE":  "often",
		"PSP_ERROR_RATE":       "-0.1",
		"PSP_IDEMPOTENCY":      "maybe",
		"PSP_SEED":             "0x",
		"PSP_SHUTDOWN_GRACE":   "0s",
		"PSP_MIGRATE_ON_START": "perhaps",
		"LOG_LEVEL":            "loud",
	}
	_, err := loadConfig(env(vars), time.Now())
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for name := range vars {
		if !strings.Contains(msg, name+" ") {
			t.Errorf("error does not mention %s:\n%s", name, msg)
		}
	}
	if !strings.Contains(msg, "PSP_DATABASE_URL is required") {
		t.Errorf("error does not say PSP_DATABASE_URL is required:\n%s", msg)
	}
	if n := strings.Count(msg, "\n") + 1; n != len(vars)+1 {
		t.Errorf("%d problems reported, want %d:\n%s", n, len(vars)+1, msg)
	}
}

func TestLoadConfigHidesTheDatabasePassword(t *testing.T) {
	t.Parallel()
	_, err := loadConfig(env(map[string]string{"PSP_DATABASE_URL": "postgres://u:s3cret@db:notaport/x"}), time.Now())
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("err = %v, want an error without the password", err)
	}
}

func TestLoadConfigAdminListenerNeedsAToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		vars map[string]string
		want string // "" when the configuration is valid
	}{
		{"off", nil, ""},
		{"on with a token", map[string]string{"PSP_ADMIN_ADDR": ":9002", "PSP_ADMIN_TOKEN": "0123456789abcdef"}, ""},
		{"on without a token", map[string]string{"PSP_ADMIN_ADDR": ":9002"}, "PSP_ADMIN_TOKEN is required"},
		{"a short token", map[string]string{"PSP_ADMIN_ADDR": ":9002", "PSP_ADMIN_TOKEN": "secret"}, "PSP_ADMIN_TOKEN must be at least 16"},
		{"a token without a listener", map[string]string{"PSP_ADMIN_TOKEN": "0123456789abcdef"}, "PSP_ADMIN_TOKEN is set but PSP_ADMIN_ADDR is not"},
		{"on the charges port", map[string]string{"PSP_ADMIN_ADDR": "127.0.0.1:8090", "PSP_ADMIN_TOKEN": "0123456789abcdef"}, "PSP_ADMIN_ADDR must differ"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{"PSP_DATABASE_URL": "postgres://db/psp"}
			for k, v := range tt.vars {
				vars[k] = v
			}
			_, err := loadConfig(env(vars), time.Now())
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("err = %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("err = %v, want %q", err, tt.want)
			case err != nil && strings.Contains(err.Error(), "0123456789abcdef"):
				t.Errorf("err = %v: it shows the token", err)
			}
		})
	}
}
