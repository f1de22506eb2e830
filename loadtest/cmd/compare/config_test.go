package main

import (
	"io"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/compare"
	"github.com/oncepay/oncepay/pkg/idem/naive"
)

// noFile is a readFile that finds nothing.
func noFile(string) ([]byte, error) { return nil, fs.ErrNotExist }

func noEnv(string) string { return "" }

// names returns the rows' names.
func names(rows []row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Name)
	}
	return out
}

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	c, err := loadConfig([]string{"compare", "-strategies", "oncepay, api-only", "-duration", "90s", "-psp-fail-after", "0"}, noEnv, noFile, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := []row{{Name: "oncepay", Strategy: naive.StrategyOncepay}, {Name: "api-only", Strategy: naive.StrategyAPIOnly}}
	if diff := cmp.Diff(want, c.Rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if c.Duration != 90*time.Second || c.Rate != 30 || c.PSPFailAfter != 0 || !strings.HasSuffix(c.Out, "/.run/compare") ||
		c.Topology != "single" || !strings.HasSuffix(c.LocalDir, "/.run/local") {
		t.Errorf("config = %+v", c)
	}
	d, err := loadConfig([]string{"compare"}, noEnv, noFile, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got := names(d.Rows)
	if len(got) != 11 || got[0] != "oncepay" || !slices.Contains(got, "get-then-set+key") || !slices.Contains(got, "off") ||
		got[9] != compare.PatroniSync || got[10] != compare.PatroniAsync {
		t.Errorf("default rows %v: want the nine strategies, then patroni-sync and patroni-async", got)
	}
}

// TestLoadConfigPostgresRows: the Postgres rows run oncepay's own build
// with their replication; the strategies' rows keep the runtime's
// topology (the environment's, else the one it last ran with).
func TestLoadConfigPostgresRows(t *testing.T) {
	t.Parallel()
	last := func(string) ([]byte, error) { return []byte("ha\n"), nil }
	c, err := loadConfig([]string{"compare", "-strategies", "patroni-sync,off,patroni-async"}, noEnv, last, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	sync, async := compare.Postgres{Name: "patroni-sync", Synchronous: true}, compare.Postgres{Name: "patroni-async"}
	want := []row{
		{Name: "patroni-sync", Strategy: naive.StrategyOncepay, Postgres: &sync},
		{Name: "off", Strategy: naive.StrategyOff},
		{Name: "patroni-async", Strategy: naive.StrategyOncepay, Postgres: &async},
	}
	if diff := cmp.Diff(want, c.Rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if c.Topology != "ha" {
		t.Errorf("topology %q, want the runtime's last, ha", c.Topology)
	}
	rt := runtime{topology: c.Topology}
	for _, tt := range []struct {
		r    row
		want []string
	}{
		{c.Rows[0], []string{"IDEM_STRATEGY=oncepay", "TOPOLOGY=ha", "PATRONI_SYNCHRONOUS_MODE=true", "PATRONI_MAXIMUM_LAG_ON_FAILOVER=1073741824"}},
		{c.Rows[1], []string{"IDEM_STRATEGY=off", "TOPOLOGY=ha"}},
		{c.Rows[2], []string{"IDEM_STRATEGY=oncepay", "TOPOLOGY=ha", "PATRONI_SYNCHRONOUS_MODE=false", "PATRONI_MAXIMUM_LAG_ON_FAILOVER=1073741824"}},
	} {
		if diff := cmp.Diff(tt.want, rt.rowEnv(tt.r)); diff != "" {
			t.Errorf("%s env (-want +got):\n%s", tt.r.Name, diff)
		}
	}
	env := map[string]string{"TOPOLOGY": "single", "ONCEPAY_LOCAL_DIR": "/tmp/x"}
	e, err := loadConfig([]string{"compare", "-strategies", "oncepay"}, func(k string) string { return env[k] }, last, io.Discard)
	if err != nil || e.Topology != "single" || e.LocalDir != "/tmp/x" {
		t.Errorf("TOPOLOGY=single in the environment: %+v, %v", e, err)
	}
}

func TestLoadConfigReportsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := loadConfig([]string{"compare", "-strategies", "oncepay,nope,oncepay", "-duration", "30s", "-rate", "0",
		"-kill-every", "soon", "-psp-fail-after", "2"}, func(k string) string { return map[string]string{"TOPOLOGY": "big"}[k] }, noFile, io.Discard)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`"nope"`, "or a Postgres row (patroni-sync, patroni-async)", "oncepay appears twice", "-duration 30s", "-rate", "-kill-every", "-psp-fail-after", `TOPOLOGY "big"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestParseExports(t *testing.T) {
	t.Parallel()
	got := parseExports([]byte("export REDIS_URL='redis://127.0.0.1:6391/0'\nnoise\nexport WORKER_RETRY_DELAYS='1s,5s,15s'\n"))
	want := map[string]string{"REDIS_URL": "redis://127.0.0.1:6391/0", "WORKER_RETRY_DELAYS": "1s,5s,15s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exports (-want +got):\n%s", diff)
	}
}

func TestLoadConfigFollowsTheLocalPorts(t *testing.T) {
	t.Parallel()
	env := map[string]string{"LOCAL_PORT_BASE": "8280", "FAULTD_ADDR": "127.0.0.1:8499"}
	c, err := loadConfig([]string{"compare"}, func(k string) string { return env[k] }, noFile, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.1:8284", "127.0.0.1:8286", "127.0.0.1:8281", "127.0.0.1:8283"} // the apis' and workers' ops ports
	if c.FaultdAddr != "127.0.0.1:8499" || strings.Join(c.Ready, ",") != strings.Join(want, ",") {
		t.Errorf("config %+v: want psp :8290, faultd :8499, ready %v", c, want)
	}
}
