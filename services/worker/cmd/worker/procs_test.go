package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// builds compiles the psp and worker binaries once per test run, into a
// directory removed when the run ends (TestMain).
type builds struct {
	dir  string
	mu   sync.Mutex
	done map[string]string
	errs map[string]error
}

var bins = &builds{done: map[string]string{}, errs: map[string]error{}}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "worker-test-bin-")
	if err != nil {
		panic(err)
	}
	bins.dir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// binary returns the path of the built command pkg (a Go import path),
// building it once per test run.
func (b *builds) binary(t testing.TB, name, pkg string) string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.done[name]; ok {
		return p
	}
	if err, ok := b.errs[name]; ok {
		t.Fatalf("build %s: %v", pkg, err)
	}
	out := filepath.Join(b.dir, name)
	if err := goBuild(t, out, pkg); err != nil {
		b.errs[name] = err
		t.Fatal(err)
	}
	b.done[name] = out
	return out
}

// goBuild runs go build -o out pkg.
func goBuild(t testing.TB, out, pkg string) error {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	start := time.Now()
	if msg, err := exec.Command(goBin, "build", "-o", out, pkg).CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
	}
	t.Logf("built %s in %s", filepath.Base(out), time.Since(start).Round(time.Millisecond))
	return nil
}

// logSink collects JSON log lines and finds the "listening" address in them.
type logSink struct {
	mu    sync.Mutex
	lines []string
	buf   []byte
	addr  chan string
	ops   string // the ops_addr of the "listening" line, if any
	admin string // the admin_addr of the "listening" line, if any (psp)
}

func newLogSink() *logSink { return &logSink{addr: make(chan string, 1)} }

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			break
		}
		line := string(s.buf[:i])
		s.buf = s.buf[i+1:]
		s.lines = append(s.lines, line)
		var l struct {
			Msg, Addr string
			OpsAddr   string `json:"ops_addr"`
			AdminAddr string `json:"admin_addr"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "listening" && l.Addr != "" {
			s.ops, s.admin = l.OpsAddr, l.AdminAddr
			select {
			case s.addr <- l.Addr:
			default:
			}
		}
	}
	return len(p), nil
}

// Lines returns the lines logged so far.
func (s *logSink) Lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

// count returns how many lines contain every one of subs.
func (s *logSink) count(subs ...string) int {
	n := 0
	for _, l := range s.Lines() {
		all := true
		for _, sub := range subs {
			all = all && strings.Contains(l, sub)
		}
		if all {
			n++
		}
	}
	return n
}

// dumpOnFailure logs the last lines of s when the test failed.
func (s *logSink) dumpOnFailure(t testing.TB, name string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		lines := s.Lines()
		if len(lines) > 150 {
			lines = lines[len(lines)-150:]
		}
		t.Logf("last log lines of %s:\n%s", name, strings.Join(lines, "\n"))
	})
}

// waitAddr waits for the "listening" line, or fails if exited reports first.
func (s *logSink) waitAddr(t testing.TB, name string, exited <-chan error) string {
	t.Helper()
	select {
	case a := <-s.addr:
		return a
	case err := <-exited:
		t.Fatalf("%s exited before listening: %v\n%s", name, err, strings.Join(s.Lines(), "\n"))
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start listening within 30s\n%s", name, strings.Join(s.Lines(), "\n"))
	}
	return ""
}

// process is a started binary.
type process struct {
	name  string
	cmd   *exec.Cmd
	logs  *logSink
	addr  string
	ops   string // the ops listener's address (api, psp); "" for the worker, whose addr is its ops listener
	admin string // the psp's admin listener's address; "" for the others
	done  chan error
}

// startProcess runs bin with env (and nothing else from the test's
// environment but PATH), waits for its "listening" line, and stops it with
// SIGTERM at cleanup unless the test killed it.
func startProcess(t testing.TB, name, bin string, env map[string]string) *process {
	t.Helper()
	p := &process{name: name, cmd: exec.Command(bin), logs: newLogSink(), done: make(chan error, 1)}
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stdout = p.logs
	p.cmd.Stderr = p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	p.logs.dumpOnFailure(t, name)
	t.Cleanup(func() { p.stop(t) })
	p.addr = p.logs.waitAddr(t, name, p.done)
	p.logs.mu.Lock()
	p.ops, p.admin = p.logs.ops, p.logs.admin
	p.logs.mu.Unlock()
	return p
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *process) kill(t testing.TB) {
	t.Helper()
	if p.cmd.ProcessState != nil {
		return
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Logf("kill %s: %v", p.name, err)
	}
	<-p.done
	p.done <- nil
	t.Logf("%s (pid %d) killed", p.name, p.cmd.Process.Pid)
}

// stop sends SIGTERM and waits up to 15s, then SIGKILL.
func (p *process) stop(t testing.TB) {
	select {
	case err := <-p.done:
		p.done <- err
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		p.done <- <-p.done
	}
}

// waitReady polls http://addr/readyz until it answers 200.
func waitReady(t testing.TB, addr string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = string(b)
			if resp.StatusCode == http.StatusOK {
				cancel()
				return
			}
		} else {
			last = err.Error()
		}
		cancel()
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s/readyz not 200 within %s; last answer: %s", addr, within, last)
}

// scanLines calls f for each line of r until it returns false.
func scanLines(r io.Reader, f func(string) bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() && f(sc.Text()) {
	}
}
