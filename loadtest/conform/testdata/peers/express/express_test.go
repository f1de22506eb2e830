package express

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oncepay/oncepay/loadtest/conform"
	"github.com/oncepay/oncepay/loadtest/conform/internal/peerreport"
)

// The tests run conform against app.js, a tiny express app behind
// express-idempotency (npm), mounted as its README shows, on the
// middleware's memory and on express-idempotency-redis-adapter. They
// report; they do not fail on the middleware's rows. They need node and
// node_modules (npm ci here; make conform-peers runs it).
func TestExpressMemory(t *testing.T) {
	peerreport.Run(t, "express-idempotency "+npmVersion(t, "express-idempotency")+", memory", serve(t, "memory"))
}

func TestExpressRedis(t *testing.T) {
	if os.Getenv("REDIS_URL") == "" {
		t.Fatal("REDIS_URL is not set: run under scripts/harness (make conform-peers does)")
	}
	peerreport.Run(t, "express-idempotency "+npmVersion(t, "express-idempotency")+", Redis (`express-idempotency-redis-adapter` "+npmVersion(t, "express-idempotency-redis-adapter")+")", serve(t, "redis"))
}

// startTimeout bounds node's start: a missing module or an unreachable
// Redis fails the test, not hang it.
const startTimeout = 10 * time.Second

// serve starts app.js on adapter and returns its target; the app is
// stopped when the test ends.
func serve(t *testing.T, adapter string) conform.Target {
	t.Helper()
	if _, err := os.Stat("node_modules/express-idempotency"); err != nil {
		t.Fatalf("express-idempotency is not installed: run npm ci in loadtest/conform/testdata/peers/express (make conform-peers does): %v", err)
	}
	cmd := exec.Command("node", "app.js")
	cmd.Env = append(os.Environ(), "ADAPTER="+adapter, "NODE_ENV=production",
		"REDIS_LATENCY_MS="+strconv.FormatInt(peerreport.RedisLatency.Milliseconds(), 10))
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node app.js (node 20 or later on PATH?): %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(2 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				port <- p
			}
		}
	}()
	select {
	case p := <-port:
		return conform.Target{
			URL:    "http://127.0.0.1:" + p + "/things",
			Header: http.Header{"Content-Type": {"application/json"}},
			Body:   `{"name":"{{vary}}"}`,
			Storm:  peerreport.Storm(),
		}
	case <-exited:
		t.Fatalf("node app.js (ADAPTER=%s) exited before listening: %s", adapter, stderr.String())
	case <-time.After(startTimeout):
		t.Fatalf("node app.js (ADAPTER=%s) did not listen within %s: %s", adapter, startTimeout, stderr.String())
	}
	return conform.Target{}
}

// npmVersion returns the version package-lock.json pins for pkg.
func npmVersion(t *testing.T, pkg string) string {
	t.Helper()
	b, err := os.ReadFile("package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		t.Fatalf("package-lock.json: %v", err)
	}
	v := lock.Packages["node_modules/"+pkg].Version
	if v == "" {
		t.Fatalf("package-lock.json pins no %s", pkg)
	}
	return v
}

// syncBuffer is a bytes.Buffer safe for the process's writes and the
// test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
