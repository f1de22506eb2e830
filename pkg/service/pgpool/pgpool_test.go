package pgpool_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/service/envconf"
	"github.com/oncepay/oncepay/pkg/service/pgpool"
)

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		want     pgpool.Timeouts
		problems []string
	}{
		{name: "defaults", want: pgpool.Defaults()},
		{
			name: "set and off",
			env:  map[string]string{"PSP_PG_STATEMENT_TIMEOUT": "500ms", "PSP_PG_LOCK_TIMEOUT": "0", "PSP_PG_IDLE_IN_TRANSACTION_TIMEOUT": "1m"},
			want: pgpool.Timeouts{Statement: 500 * time.Millisecond, IdleInTransaction: time.Minute},
		},
		{
			name:     "invalid",
			env:      map[string]string{"PSP_PG_STATEMENT_TIMEOUT": "-1s", "PSP_PG_LOCK_TIMEOUT": "1500us", "PSP_PG_IDLE_IN_TRANSACTION_TIMEOUT": "soon"},
			want:     pgpool.Timeouts{Statement: -time.Second, Lock: 1500 * time.Microsecond, IdleInTransaction: pgpool.Defaults().IdleInTransaction},
			problems: []string{"PSP_PG_STATEMENT_TIMEOUT", "PSP_PG_LOCK_TIMEOUT", "PSP_PG_IDLE_IN_TRANSACTION_TIMEOUT"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := envconf.New(func(k string) string { return tc.env[k] })
			got := pgpool.Read(p, "PSP_")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Read (-want +got):\n%s", diff)
			}
			var names []string
			for _, pr := range p.Problems() {
				names = append(names, pr.Name)
			}
			if diff := cmp.Diff(tc.problems, names); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigSetsRuntimeParams(t *testing.T) {
	cfg, err := pgpool.Config("postgres://u:p@127.0.0.1:5432/db?lock_timeout=9000",
		pgpool.Timeouts{Statement: 1500 * time.Millisecond, Lock: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.ConnConfig.RuntimeParams
	want := map[string]string{"statement_timeout": "1500", "lock_timeout": "2000"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("RuntimeParams[%s] = %q, want %q", k, got[k], v)
		}
	}
	if v, ok := got["idle_in_transaction_session_timeout"]; ok {
		t.Errorf("idle_in_transaction_session_timeout = %q, want it left to the server (0 = off)", v)
	}
	if _, err := pgpool.Config("postgres://u:secret@[::1", pgpool.Timeouts{}); err == nil {
		t.Error("Config accepted an invalid URL")
	}
}

// A pool's sessions carry the timeouts, and a statement that runs longer
// than the statement timeout fails with query_canceled (57014).
func TestStatementTimeoutCutsALongQuery(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	pool, err := pgpool.New(ctx, url, pgpool.Timeouts{Statement: 200 * time.Millisecond, Lock: 300 * time.Millisecond, IdleInTransaction: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)

	var st, lt, it string
	if err := pool.QueryRow(ctx, "SELECT current_setting('statement_timeout'), current_setting('lock_timeout'), current_setting('idle_in_transaction_session_timeout')").Scan(&st, &lt, &it); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"200ms", "300ms", "400ms"}, []string{st, lt, it}); diff != "" {
		t.Errorf("session settings (-want +got):\n%s", diff)
	}

	start := time.Now()
	_, err = pool.Exec(ctx, "SELECT pg_sleep(5)")
	took := time.Since(start)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57014" {
		t.Fatalf("pg_sleep(5) = %v, want statement timeout (SQLSTATE 57014)", err)
	}
	if took > 2*time.Second {
		t.Errorf("pg_sleep(5) failed after %s, want about the 200ms statement timeout", took)
	}
}
