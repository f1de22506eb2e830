package process_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncepay/oncepay/loadtest/process"
)

// patroniHarness writes a script that stands in for scripts/harness: it logs
// its arguments, prints a fault's cost line, and answers `patroni ready`
// with readyExit. It returns the script and its log.
func patroniHarness(t *testing.T, readyExit int) (script, log string) {
	t.Helper()
	dir := t.TempDir()
	script, log = filepath.Join(dir, "harness"), filepath.Join(dir, "calls")
	body := `#!/bin/sh
echo "$*" >>` + log + `
case "$1 $2" in
"patroni ready") echo 'patroni: not ready: pg-1 does not stream from the leader pg-2' >&2; exit ` + string(rune('0'+readyExit)) + ` ;;
esac
echo 'cost: {"node":"pg-1","refused_ms":9300,"promoted_ms":9100,"took_ms":20000,"detail":"new primary pg-2"}'
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, log
}

// TestPostgresFaultsWaitUntilReady: each Postgres fault returns only after
// `harness patroni ready` (bounded) says the cluster is whole, and its
// cost says how long that took; a cluster that is not whole is the
// fault's error.
func TestPostgresFaultsWaitUntilReady(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault func(*process.Backend) error
		want  string // the fault's command line
	}{
		{"failover", func(b *process.Backend) error { _, err := b.FailoverPostgres(context.Background(), 0); return err }, "failover-postgres"},
		{"lagged failover", func(b *process.Backend) error { _, err := b.FailoverPostgres(context.Background(), 2e9); return err }, "failover-postgres --lag 2000"},
		{"switchover", func(b *process.Backend) error { _, err := b.SwitchoverPostgres(context.Background()); return err }, "switchover-postgres"},
		{"partition", func(b *process.Backend) error { _, err := b.PartitionPostgres(context.Background(), 25e9); return err }, "partition-postgres 25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			script, log := patroniHarness(t, 0)
			b := process.New(process.Config{Harness: script})
			if err := tc.fault(b); err != nil {
				t.Fatalf("fault: %v", err)
			}
			calls, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want + "\npatroni ready 120\n"
			if string(calls) != want {
				t.Errorf("harness calls %q, want %q: the fault, then the wait until the cluster is whole", calls, want)
			}
		})
	}

	script, _ := patroniHarness(t, 0)
	cost, err := process.New(process.Config{Harness: script}).FailoverPostgres(context.Background(), 0)
	if err != nil || cost.Node != "pg-1" || !strings.HasPrefix(cost.Detail, "new primary pg-2; cluster whole (replicas streaming, replayed) ") {
		t.Errorf("cost %+v, %v: want the fault's own detail, then how long until the cluster was whole", cost, err)
	}

	script, _ = patroniHarness(t, 1)
	cost, err = process.New(process.Config{Harness: script}).FailoverPostgres(context.Background(), 0)
	if err == nil || !strings.Contains(err.Error(), "not whole again within 2m0s") || !strings.Contains(cost.Detail, "cluster NOT whole") {
		t.Errorf("cost %+v, %v: want the fault failed, the cluster not whole", cost, err)
	}
}
