package process_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/process"
)

// fakeHarness writes a script that stands in for scripts/harness: it
// records its arguments and prints what a failover command prints.
func fakeHarness(t *testing.T, out string, exit int) (path, argsFile string) {
	t.Helper()
	dir := t.TempDir()
	path, argsFile = filepath.Join(dir, "harness"), filepath.Join(dir, "args")
	script := "#!/bin/sh\necho \"$@\" >" + argsFile + "\ncat <<'OUT'\n" + out + "\nOUT\nexit " + string(rune('0'+exit)) + "\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, argsFile
}

func TestFailoverReadsTheHarnessCost(t *testing.T) {
	t.Parallel()
	h, args := fakeHarness(t, "redis-2: killed\ncost: {\"node\":\"redis-2\",\"slot\":8650,\"refused_ms\":5710,\"detail\":\"redis-2 is a slave again\"}", 0)
	b := process.New(process.Config{Harness: h})
	got, err := b.FailoverRedis(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := fault.Cost{Node: "redis-2", Slot: 8650, RefusedMS: 5710, Detail: "redis-2 is a slave again"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cost (-want +got):\n%s", diff)
	}
	if a, _ := os.ReadFile(args); strings.TrimSpace(string(a)) != "failover-redis" {
		t.Errorf("harness got %q, want failover-redis", a)
	}
}

func TestKillQueueLeaderPassesQueueAndSeconds(t *testing.T) {
	t.Parallel()
	h, args := fakeHarness(t, `cost: {"node":"rabbitmq-1","refused_ms":2100}`, 0)
	got, err := process.New(process.Config{Harness: h}).KillQueueLeader(context.Background(), fault.ChargeQueue, 15e9)
	if err != nil {
		t.Fatal(err)
	}
	if got.Node != "rabbitmq-1" || got.RefusedMS != 2100 {
		t.Errorf("cost %+v, want rabbitmq-1 refused 2100ms", got)
	}
	if a, _ := os.ReadFile(args); strings.TrimSpace(string(a)) != "kill-queue-leader payments.charge 15" {
		t.Errorf("harness got %q", a)
	}
}

func TestFailoverFailsWithTheHarness(t *testing.T) {
	t.Parallel()
	h, _ := fakeHarness(t, "harness: migrate-slot: no node answers", 1)
	got, err := process.New(process.Config{Harness: h}).MigrateSlot(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no node answers") {
		t.Errorf("err = %v, want the harness's reason", err)
	}
	if got.RefusedMS != -1 {
		t.Errorf("cost %+v, want RefusedMS -1 (not measured)", got)
	}
}
