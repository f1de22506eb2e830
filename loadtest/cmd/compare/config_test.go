package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/pkg/idem/naive"
)

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	c, err := loadConfig([]string{"compare", "-strategies", "oncepay, api-only", "-duration", "90s", "-psp-fail-after", "0"}, noEnv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]naive.Strategy{naive.StrategyOncepay, naive.StrategyAPIOnly}, c.Strategies); diff != "" {
		t.Errorf("strategies (-want +got):\n%s", diff)
	}
	if c.Duration != 90*time.Second || c.Rate != 30 || c.PSPFailAfter != 0 || !strings.HasSuffix(c.Out, "/.run/compare") {
		t.Errorf("config = %+v", c)
	}
	d, err := loadConfig([]string{"compare"}, noEnv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Strategies) != 6 || d.Strategies[0] != naive.StrategyOncepay {
		t.Errorf("default strategies %v", d.Strategies)
	}
}

func TestLoadConfigReportsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := loadConfig([]string{"compare", "-strategies", "oncepay,nope,oncepay", "-duration", "30s", "-rate", "0",
		"-kill-every", "soon", "-psp-fail-after", "2"}, noEnv, io.Discard)
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

func noEnv(string) string { return "" }

func TestConfigFollowsLocalPortBase(t *testing.T) {
	t.Parallel()
	env := map[string]string{"LOCAL_PORT_BASE": "8180", "FAULTD_ADDR": "127.0.0.1:8399"}
	c, err := loadConfig([]string{"compare"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.1:8180", "127.0.0.1:8182", "127.0.0.1:8181", "127.0.0.1:8183"}
	if diff := cmp.Diff(want, c.Ready); diff != "" || c.FaultdAddr != "127.0.0.1:8399" {
		t.Errorf("ready (-want +got):\n%s\nfaultd %s, want 127.0.0.1:8399", diff, c.FaultdAddr)
	}
}
