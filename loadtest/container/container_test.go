package container

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/internal/proc"
	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/process"
)

var (
	_ fault.Backend = (*Docker)(nil)
	_ fault.Prober  = (*Docker)(nil)
	_ fault.Backend = (*Kube)(nil)
	_ fault.Prober  = (*Kube)(nil)
)

// TestInFlight counts a real request in flight, on both ends, through the
// kernel's TCP state of this very process (same network namespace: no
// privilege needed).
func TestInFlight(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	received, release := make(chan struct{}), make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(received)
		<-release
		io.WriteString(w, "ok")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	pid := os.Getpid()
	n, evidence, err := inFlight(pid, process.Replica{ServerPort: port})
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("idle: n = %d (%s), want 0", n, evidence)
	}

	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-received
	time.Sleep(20 * time.Millisecond) // let the kernel's last-data timestamps tick apart
	for _, r := range []process.Replica{{ServerPort: port}, {UpstreamPort: port}} {
		n, evidence, err := inFlight(pid, r)
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%+v with a request in flight: n = %d (%s), want 1", r, n, evidence)
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// fakeProc writes a /proc-like tree: pid -> (cgroup, exe, state).
func fakeProc(t *testing.T, procs map[int][3]string) string {
	t.Helper()
	root := t.TempDir()
	for pid, p := range procs {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "cgroup"), []byte(p[0]), 0o644)
		os.Symlink(p[1], filepath.Join(dir, "exe"))
		os.WriteFile(filepath.Join(dir, "stat"), []byte(fmt.Sprintf("%d (%s) %s 1 1", pid, filepath.Base(p[1]), p[2])), 0o644)
	}
	return root
}

func TestPidsInCgroup(t *testing.T) {
	t.Parallel()
	const uid = "3c37da6c-5d9d-4315-a2f8-2e9adb79dbb3"
	sysd := "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod" +
		strings.ReplaceAll(uid, "-", "_") + ".slice/cri-containerd-abc.scope"
	root := fakeProc(t, map[int][3]string{
		100: {"12:memory:" + sysd + "\n", "/api", "S"},               // the pod's api
		101: {"12:memory:" + sysd + "\n", "/probe", "S"},             // an exec probe in the same pod
		102: {"12:memory:/kubepods/pod" + uid + "/x\n", "/api", "Z"}, // cgroupfs driver, but a zombie
		103: {"12:memory:/other\n", "/api", "S"},                     // another pod's api
	})
	got, err := pidsInCgroup(root, "api", "pod"+uid, "pod"+strings.ReplaceAll(uid, "-", "_"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{100}, got); diff != "" {
		t.Errorf("pidsInCgroup (-want +got):\n%s", diff)
	}
}

func TestKubeReplicaPod(t *testing.T) {
	t.Parallel()
	k := NewKube(KubeConfig{Replicas: map[string]process.Replica{
		"api-1": {Program: "api", ServerPort: 8080}, "api-2": {Program: "api", ServerPort: 8080}, "api-3": {Program: "api"},
	}})
	var gotArgs []string
	k.run = func(ctx context.Context, args ...string) ([]byte, error) {
		gotArgs = args
		return []byte(`{"items":[
			{"metadata":{"name":"oncepay-api-b","uid":"u-b"},"status":{"phase":"Running"}},
			{"metadata":{"name":"oncepay-api-0","uid":"u-0","deletionTimestamp":"2026-01-01T00:00:00Z"},"status":{"phase":"Running"}},
			{"metadata":{"name":"oncepay-api-a","uid":"u-a"},"status":{"phase":"Running"}},
			{"metadata":{"name":"oncepay-api-c","uid":"u-c"},"status":{"phase":"Pending"}}]}`), nil
	}
	for _, tt := range []struct{ replica, wantPod, wantErr string }{
		{"api-1", "oncepay-api-a", ""},
		{"api-2", "oncepay-api-b", ""},
		{"api-3", "", "2 api pods running"},
		{"api-9", "", "unknown replica"},
	} {
		_, p, err := k.replicaPod(context.Background(), tt.replica)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: error %v, want %q", tt.replica, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || p.Metadata.Name != tt.wantPod):
			t.Errorf("%s: pod %q (%v), want %s", tt.replica, p.Metadata.Name, err, tt.wantPod)
		}
	}
	if want := "app.kubernetes.io/instance=oncepay,app.kubernetes.io/component=api"; !strings.Contains(strings.Join(gotArgs, " "), want) {
		t.Errorf("kubectl args %v, want the selector %s", gotArgs, want)
	}
}

func TestDockerReplicaPID(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	program := filepath.Base(self)
	d := NewDocker(DockerConfig{Project: "oncepay", Replicas: map[string]process.Replica{
		"api-1": {Program: program, ServerPort: 8080}, "api-2": {Program: "api"},
	}})
	var calls [][]string
	d.run = func(ctx context.Context, args ...string) ([]byte, error) {
		calls = append(calls, args)
		switch args[0] {
		case "ps":
			return []byte("0123456789abcdef\n"), nil
		case "inspect":
			return []byte(strconv.Itoa(os.Getpid()) + "\n"), nil
		}
		return nil, fmt.Errorf("unexpected docker %v", args)
	}
	_, pid, err := d.replicaPID(context.Background(), "api-1")
	if err != nil || pid != os.Getpid() {
		t.Fatalf("replicaPID(api-1) = %d, %v; want %d", pid, err, os.Getpid())
	}
	if !strings.Contains(strings.Join(calls[0], " "), "label=com.docker.compose.service=api-1") {
		t.Errorf("docker ps args %v: want the compose service label", calls[0])
	}
	// cached: no more docker calls while the pid lives
	n := len(calls)
	if _, _, err := d.replicaPID(context.Background(), "api-1"); err != nil || len(calls) != n {
		t.Errorf("second lookup: %v, %d more docker calls, want 0", err, len(calls)-n)
	}
	// a pid that runs another program is refused (not the container we think)
	if _, _, err := d.replicaPID(context.Background(), "api-2"); err == nil || !strings.Contains(err.Error(), "not api") {
		t.Errorf("replicaPID(api-2) error = %v, want a program mismatch", err)
	}
}

// TestKubeKillSIGKILLDelete: the process InFlight looked at (cached) is
// killed at once, then exactly its pod is deleted with no grace, and the
// cached pids of that program are forgotten (the replica names shift when
// a pod is replaced); other programs' stay.
func TestKubeKillSIGKILLDelete(t *testing.T) {
	t.Parallel()
	start := func() *proc.Proc {
		p, err := proc.Start(proc.Spec{Name: "sleep", Argv: []string{"sleep", "60"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Kill)
		return p
	}
	victim, other, worker := start(), start(), start()
	k := NewKube(KubeConfig{KillMode: KillSIGKILLDelete, Replicas: map[string]process.Replica{
		"api-1": {Program: "sleep", ServerPort: 8080}, "api-2": {Program: "sleep", ServerPort: 8080},
		"worker-1": {Program: "worker-sleep"},
	}})
	var calls [][]string
	k.run = func(ctx context.Context, args ...string) ([]byte, error) {
		calls = append(calls, args)
		return nil, nil
	}
	k.pids.put("api-1", victim.PID, "oncepay-api-a")
	k.pids.put("api-2", other.PID, "oncepay-api-b")
	k.pids.put("worker-1", worker.PID, "oncepay-worker-a")

	pid, err := k.KillReplica(context.Background(), "api-1")
	if err != nil || pid != victim.PID {
		t.Fatalf("KillReplica(api-1) = %d, %v; want pid %d", pid, err, victim.PID)
	}
	if alive("/proc", victim.PID) {
		t.Errorf("pid %d still alive after the kill", victim.PID)
	}
	if !alive("/proc", other.PID) {
		t.Errorf("the other replica's pid %d was killed too", other.PID)
	}
	want := [][]string{{"delete", "pod", "oncepay-api-a", "--grace-period=0", "--force", "--wait=false"}}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("kubectl calls (-want +got):\n%s", diff)
	}
	if _, _, ok := k.pids.get("api-2", "sleep"); ok {
		t.Error("api-2's pid is still cached after an api pod was deleted (names may have shifted)")
	}
	// worker-1's entry is checked against its own program name, which the
	// sleep process does not run; look at the map itself
	k.pids.mu.Lock()
	_, kept := k.pids.pids["worker-1"]
	k.pids.mu.Unlock()
	if !kept {
		t.Error("worker-1's cached pid was dropped by an api kill")
	}
}
