package container

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/fault/faulttest"
)

// TestPSPFaultsOnContainerRuntimes: the compose and kind backends carry
// out the psp's fault kinds (reject-psp, psp-outage) through its admin API,
// as the local one does: the driver finds them a fault.Rejecter and a
// fault.Outager, each call reaches the admin listener, and each fault puts
// back the value it found (not a default: the knobs start off zero).
func TestPSPFaultsOnContainerRuntimes(t *testing.T) {
	for name, backend := range map[string]func(*fault.PSPAdmin) fault.Backend{
		"compose": func(a *fault.PSPAdmin) fault.Backend { return NewDocker(DockerConfig{PSP: a}) },
		"kind":    func(a *fault.PSPAdmin) fault.Backend { return NewKube(KubeConfig{PSP: a}) },
	} {
		t.Run(name, func(t *testing.T) {
			found := map[string]any{fault.RejectKnob: 0.05, "fail_before_rate": 0.02}
			psp := faulttest.NewPSPAdmin(t, faulttest.PSPConfig{Knobs: found})
			b := backend(&fault.PSPAdmin{URL: psp.URL, Token: "t"})
			rj, ok := b.(fault.Rejecter)
			if !ok {
				t.Fatalf("%T is no fault.Rejecter: reject-psp cannot run on %s", b, name)
			}
			if err := rj.PSPReject(t.Context(), 0.3, 5*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			o, ok := b.(fault.Outager)
			if !ok {
				t.Fatalf("%T is no fault.Outager", b)
			}
			if err := o.PSPOutage(t.Context(), 5*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			want := []map[string]any{
				{fault.RejectKnob: 0.3, "reject_for_ms": 5.0}, {fault.RejectKnob: 0.05},
				{"fail_before_rate": 1.0}, {"fail_before_rate": 0.02},
			}
			if diff := cmp.Diff(want, psp.Puts()); diff != "" {
				t.Errorf("admin PUTs (-want +got):\n%s", diff)
			}
			got := psp.Knobs()
			for k, v := range found {
				if got[k] != v {
					t.Errorf("%s after the faults = %v, want %v, as found", k, got[k], v)
				}
			}
		})
	}
	if err := NewDocker(DockerConfig{}).PSPReject(t.Context(), 0.3, time.Millisecond); err == nil {
		t.Error("no psp admin configured: PSPReject returned no error")
	}
}

// TestDockerStallsDebiansRedis: the lab's redis:7 stand-in runs Debian's
// redis-server, a link to redis-check-rdb, so the container's main process
// executes redis-check-rdb; a stall freezes it all the same (and refuses a
// process that is neither).
func TestDockerStallsDebiansRedis(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(name string) *exec.Cmd {
		t.Helper()
		b, err := os.ReadFile(sleep)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(path, "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	for _, tc := range []struct {
		program string
		ok      bool
	}{{"redis-check-rdb", true}, {"redis-server", true}, {"bash", false}} {
		t.Run(tc.program, func(t *testing.T) {
			cmd := run(tc.program)
			d := NewDocker(DockerConfig{Project: "oncepay"})
			d.run = func(ctx context.Context, args ...string) ([]byte, error) {
				switch args[0] {
				case "ps":
					return []byte("0123456789abcdef\n"), nil
				case "inspect":
					return []byte(strconv.Itoa(cmd.Process.Pid) + "\n"), nil
				}
				return nil, fmt.Errorf("unexpected docker %v", args)
			}
			pid, err := d.StallService(t.Context(), "redis", 10*time.Millisecond)
			if tc.ok && (err != nil || pid != cmd.Process.Pid) {
				t.Fatalf("StallService = %d, %v; want %d, nil", pid, err, cmd.Process.Pid)
			}
			if !tc.ok && err == nil {
				t.Fatalf("StallService of a %s process: no error", tc.program)
			}
		})
	}
}
