package container

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/oncepay/oncepay/loadtest/fault"
)

// TestPSPFaultsOnContainerRuntimes: the compose and kind backends carry
// out the psp's fault kinds (reject-psp, psp-outage) through its admin API,
// as the local one does: the driver finds them a fault.Rejecter and a
// fault.Outager, and each call reaches the admin listener.
func TestPSPFaultsOnContainerRuntimes(t *testing.T) {
	var mu sync.Mutex
	var puts []map[string]any
	psp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodPut {
			var patch map[string]any
			if err := json.NewDecoder(r.Body).Decode(&patch); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			puts = append(puts, patch)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{fault.RejectKnob: 0.0, "fail_before_rate": 0.0})
	}))
	t.Cleanup(psp.Close)
	admin := &fault.PSPAdmin{URL: psp.URL, Token: "t"}

	for name, b := range map[string]fault.Backend{
		"compose": NewDocker(DockerConfig{PSP: admin}),
		"kind":    NewKube(KubeConfig{PSP: admin}),
	} {
		t.Run(name, func(t *testing.T) {
			mu.Lock()
			puts = nil
			mu.Unlock()
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
			mu.Lock()
			defer mu.Unlock()
			if len(puts) != 4 || puts[0][fault.RejectKnob] != 0.3 || puts[2]["fail_before_rate"] != 1.0 {
				t.Errorf("admin PUTs = %v, want reject_rate 0.3 and back, fail_before_rate 1 and back", puts)
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
