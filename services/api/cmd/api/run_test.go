package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/services/api/internal/config"
)

func TestRunRejectsBadArguments(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"api", "serv"}, {"api", "serve", "extra"}} {
		var stderr bytes.Buffer
		err := run(context.Background(), args, func(string) string { return "" }, &bytes.Buffer{}, &stderr)
		if err == nil || !strings.Contains(stderr.String(), "usage: api [serve|migrate]") {
			t.Errorf("run(%q) = %v, stderr %q; want an error and the usage", args, err, stderr.String())
		}
	}
}

// TestRunReportsEveryConfigProblem: run fails before touching anything and
// lists all problems at once.
func TestRunReportsEveryConfigProblem(t *testing.T) {
	t.Parallel()
	env := map[string]string{"IDEM_LEASE": "soon", "API_MERCHANT_KEYS": "m=short"}
	err := run(context.Background(), []string{"api"}, func(k string) string { return env[k] }, &bytes.Buffer{}, &bytes.Buffer{})
	var cerr *config.Error
	if !errors.As(err, &cerr) {
		t.Fatalf("run() = %v, want a *config.Error", err)
	}
	want := []string{
		"REDIS_URL: required, not set",
		"DATABASE_URL: required, not set",
		"AMQP_URL: required, not set",
		`IDEM_LEASE: "soon" is not a duration such as 500ms, 10s or 24h`,
		`API_MERCHANT_KEYS: entry 1: the key of merchant "m" is shorter than 16 characters`,
	}
	if diff := cmp.Diff(want, cerr.Problems); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

// TestRunMigrate: `api migrate` applies the schema and exits; a second run
// has nothing to do.
func TestRunMigrate(t *testing.T) {
	t.Parallel()
	dbURL := testenv.NewDatabase(t)
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return dbURL
		}
		return ""
	}
	for i := range 2 {
		var stdout bytes.Buffer
		if err := run(context.Background(), []string{"api", "migrate"}, getenv, &stdout, &bytes.Buffer{}); err != nil {
			t.Fatalf("migrate #%d: %v", i+1, err)
		}
		if !strings.Contains(stdout.String(), `"msg":"migrations applied"`) {
			t.Errorf("migrate #%d logged %s", i+1, stdout.String())
		}
	}
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var tables int
	pool.QueryRow(context.Background(), `SELECT count(*) FROM information_schema.tables
		WHERE table_name IN ('payments', 'outbox', 'charge_takeovers')`).Scan(&tables)
	if tables != 3 {
		t.Errorf("%d of the 3 tables exist after migrate", tables)
	}
}

// TestMetrics: /metrics exposes the api's metrics with the labels of
// docs/api.md.
func TestMetrics(t *testing.T) {
	t.Parallel()
	a := startAPI(t, apiOptions{})
	key := testenv.Name(t, "k")
	a.post(t, a.merchantA, key, paymentBody)
	a.post(t, a.merchantA, key, paymentBody)
	tests := []struct {
		sample string
		want   float64
	}{
		{`http_requests_total{method="POST",route="/v1/payments",status="202"}`, 2},
		{`http_request_duration_seconds_count{route="/v1/payments"}`, 2},
		{`idem_boundary_outcomes_total{op="begin",outcome="acquired",stage="api"}`, 1},
		{`idem_boundary_outcomes_total{op="begin",outcome="replayed",stage="api"}`, 1},
		{`idem_boundary_outcomes_total{op="complete",outcome="ok",stage="api"}`, 1},
		{`idem_boundary_outcomes_total{op="begin",outcome="in_progress",stage="api"}`, 0},
		{`idem_boundary_duration_seconds_count{op="begin"}`, 2},
		{`payments_created_total`, 1},
		{`payments_backstop_total{result="replayed"}`, 0},
		{`outbox_published_total{path="inline"}`, 1},
		{`outbox_published_total{path="relay"}`, 0},
		{`outbox_published_total{path="sweep"}`, 0},
		{`idem_lease_end_retries_total{op="complete",result="recovered"}`, 0},
		{`idem_lease_end_retries_total{op="release",result="gave_up"}`, 0},
		{`outbox_publish_failures_total`, 0},
		{`outbox_publish_duration_seconds_count`, 1},
		{`outbox_backlog`, 0},
		{`api_instance_info{api_instance="test"}`, 1},
		{`idem_boundary_outcomes_total{op="begin",outcome="full",stage="api"}`, 0},
		{`redis_memory_max_bytes`, 0}, // the test Redis has no maxmemory
	}
	for _, tt := range tests {
		if got := a.metric(t, tt.sample); got != tt.want {
			t.Errorf("%s = %v, want %v", tt.sample, got, tt.want)
		}
	}
	if used := a.metric(t, "redis_memory_used_bytes"); used <= 0 {
		t.Errorf("redis_memory_used_bytes = %v, want Redis's used_memory", used)
	}
	if r := a.opsGet(t, "/livez"); r.Status != http.StatusOK {
		t.Errorf("livez = %d", r.Status)
	}
}
