package main

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/pkg/idem/naive"
)

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	c, err := loadConfig([]string{"compare", "-strategies", "oncepay, api-only", "-duration", "90s", "-psp-fail-after", "0"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]naive.Strategy{naive.StrategyOncepay, naive.StrategyAPIOnly}, c.Strategies); diff != "" {
		t.Errorf("strategies (-want +got):\n%s", diff)
	}
	if c.Duration != 90*time.Second || c.Rate != 30 || c.PSPFailAfter != 0 || !strings.HasSuffix(c.Out, "/.run/compare") {
		t.Errorf("config = %+v", c)
	}
	d, err := loadConfig([]string{"compare"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Strategies) != 9 || d.Strategies[0] != naive.StrategyOncepay || !slices.Contains(d.Strategies, naive.StrategyGetThenSetKey) || !slices.Contains(d.Strategies, naive.StrategyOff) {
		t.Errorf("default strategies %v", d.Strategies)
	}
}

func TestLoadConfigReportsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := loadConfig([]string{"compare", "-strategies", "oncepay,nope,oncepay", "-duration", "30s", "-rate", "0",
		"-kill-every", "soon", "-psp-fail-after", "2"}, func(string) string { return "" }, io.Discard)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`"nope"`, "oncepay appears twice", "-duration 30s", "-rate", "-kill-every", "-psp-fail-after"} {
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
	c, err := loadConfig([]string{"compare"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.1:8284", "127.0.0.1:8286", "127.0.0.1:8281", "127.0.0.1:8283"} // the apis' and workers' ops ports
	if c.FaultdAddr != "127.0.0.1:8499" || strings.Join(c.Ready, ",") != strings.Join(want, ",") {
		t.Errorf("config %+v: want psp :8290, faultd :8499, ready %v", c, want)
	}
}
