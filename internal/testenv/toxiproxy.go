package testenv

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/proc"
)

const toxiproxyHint = "install the pinned toxiproxy with `make tools` (deploy/tools toxiproxy puts bin/toxiproxy-server in the repository), or set TOXIPROXY_SERVER=/path/to/toxiproxy-server"

// Toxiproxy starts a private toxiproxy-server for this test on a free port
// of 127.0.0.1, waits until its API answers, and returns the API's URL
// (http://127.0.0.1:PORT). It has no proxies; it is killed at cleanup, and
// its proxies with it. The binary is $TOXIPROXY_SERVER, else the
// repository's bin/toxiproxy-server (make tools), else toxiproxy-server on
// PATH; a missing one fails the test with how to install it.
func Toxiproxy(t testing.TB) string {
	t.Helper()
	Integration(t)
	bin := toxiproxyServer(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	log, err := os.Create(filepath.Join(t.TempDir(), "toxiproxy.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = log.Close() })
	p, err := proc.Start(proc.Spec{Name: "toxiproxy-server", Argv: []string{bin, "-host", "127.0.0.1", "-port", strconv.Itoa(port)}, Log: log})
	if err != nil {
		t.Fatalf("%v\n%s", err, toxiproxyHint)
	}
	t.Cleanup(p.Kill)
	api := "http://127.0.0.1:" + strconv.Itoa(port)
	if err := proc.WaitHTTP(context.Background(), p, api+"/version", 10*time.Second); err != nil {
		out, _ := os.ReadFile(log.Name())
		t.Fatalf("%v\n%s", err, out)
	}
	return api
}

// toxiproxyServer finds the toxiproxy-server binary, or fails the test.
func toxiproxyServer(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("TOXIPROXY_SERVER"); p != "" {
		return p
	}
	if dir, err := os.Getwd(); err == nil {
		for ; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
				if p := filepath.Join(dir, "bin", "toxiproxy-server"); isExecutable(p) {
					return p
				}
				break
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
	}
	if p, err := exec.LookPath("toxiproxy-server"); err == nil {
		return p
	}
	t.Fatalf("toxiproxy-server not found: %s", toxiproxyHint)
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}
