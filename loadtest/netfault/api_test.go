package netfault_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncepay/oncepay/internal/proc"
	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/loadtest/netfault"
	"github.com/oncepay/oncepay/services/api/migrations"
)

// apiProcess is the real api binary, started for one test.
type apiProcess struct {
	base string // the payments listener
	ops  string // the ops listener (/readyz)
	key  string // the merchant's API key
	pool *pgxpool.Pool
	logs *lines
}

// lines collects a process's output.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.Write(p) }
func (l *lines) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

// startAPI builds the api and runs it with its own database, merchant and
// exchange on the harness services, except that it reaches Redis at
// redisURL; it waits until /readyz answers 200 and stops it at cleanup.
func startAPI(t *testing.T, redisURL string, extra map[string]string) *apiProcess {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "api")
	build := proc.Spec{Name: "go build api", Argv: []string{"go", "build", "-o", bin, "github.com/oncepay/oncepay/services/api/cmd/api"}}
	if r, err := proc.Run(context.Background(), build, 5*time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, r.Out)
	}
	dbURL := testenv.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := migrations.Apply(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	merchant := strings.ReplaceAll(testenv.Name(t, "m"), "-", "_")
	a := &apiProcess{key: "sk_test_" + merchant, pool: pool, logs: &lines{}}
	env := map[string]string{
		"API_LISTEN_ADDR": "127.0.0.1:0", "API_OPS_ADDR": "127.0.0.1:0", "REDIS_URL": redisURL, "DATABASE_URL": dbURL,
		"AMQP_URL": testenv.AMQPURL(t), "AMQP_EXCHANGE": testenv.Name(t, "payments"),
		"API_MERCHANT_KEYS": merchant + "=" + a.key, "API_INSTANCE": "api-1", "LOG_LEVEL": "debug",
		"SHUTDOWN_GRACE": "5s", "PATH": os.Getenv("PATH"),
	}
	for k, v := range extra {
		env[k] = v
	}
	spec := proc.Spec{Name: "api", Argv: []string{bin, "serve"}, OnlyEnv: true}
	for k, v := range env {
		spec.Env = append(spec.Env, k+"="+v)
	}
	pr, pw := io.Pipe()
	spec.Log = pw
	p, err := proc.Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(15 * time.Second); err != nil {
			t.Errorf("api: %v", err)
		}
		pw.Close()
		if t.Failed() {
			t.Logf("api logs:\n%s", a.logs.String())
		}
	})
	addr := make(chan [2]string, 1)
	go func() {
		s := bufio.NewScanner(pr)
		for s.Scan() {
			fmt.Fprintln(a.logs, s.Text())
			var l struct {
				Msg, Addr string
				OpsAddr   string `json:"ops_addr"`
			}
			if json.Unmarshal(s.Bytes(), &l) == nil && l.Msg == "listening" {
				addr <- [2]string{l.Addr, l.OpsAddr}
			}
		}
	}()
	select {
	case x := <-addr:
		a.base, a.ops = "http://"+x[0], "http://"+x[1]
	case <-time.After(20 * time.Second):
		t.Fatalf("api did not listen within 20s\n%s", a.logs.String())
	}
	a.waitReady(t, http.StatusOK, 15*time.Second)
	return a
}

// waitReady polls the ops listener's /readyz until it answers status.
func (a *apiProcess) waitReady(t *testing.T, status int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := 0
		if resp, err := http.Get(a.ops + "/readyz"); err == nil {
			got = resp.StatusCode
			resp.Body.Close()
		}
		if got == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz answered %d for %s, want %d", got, within, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pay posts a payment under key and returns the status and body.
func (a *apiProcess) pay(t *testing.T, key string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, a.base+"/v1/payments",
		strings.NewReader(`{"amount": 1999, "currency": "EUR", "customer_id": "cus_net", "description": "netfault"}`))
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /v1/payments: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

func (a *apiProcess) payments(t *testing.T, key string) int {
	t.Helper()
	var n int
	if err := a.pool.QueryRow(context.Background(), `SELECT count(*) FROM payments WHERE idempotency_key = $1`, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Latency above the boundary timeout on the api's Redis path: the api
// fails closed (503, /readyz 503) and creates nothing; once the latency is
// gone, the refused key gets its one payment and the earlier payment
// replays byte for byte.
func TestAPILatencyOnRedisFailsClosed(t *testing.T) {
	t.Parallel()
	in := netfault.New(testenv.Toxiproxy(t))
	u, err := url.Parse(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = fmt.Sprintf("/%d", redisDB)
	proxied, err := in.CreateProxy("api-1", netfault.Redis, "127.0.0.1:0", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = proxied
	const lease = 2 * time.Second
	a := startAPI(t, u.String(), map[string]string{"IDEM_TIMEOUT": "300ms", "IDEM_LEASE": lease.String()})

	before := testenv.Name(t, "before")
	status, first := a.pay(t, before)
	if status != http.StatusAccepted {
		t.Fatalf("payment before the fault: %d %s", status, first)
	}

	undo, err := in.Latency("api-1", netfault.Redis, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	key := testenv.Name(t, "during")
	if status, body := a.pay(t, key); status != http.StatusServiceUnavailable {
		t.Errorf("new payment with Redis 1s away (boundary timeout 300ms): %d %s, want 503", status, body)
	}
	if status, body := a.pay(t, before); status != http.StatusServiceUnavailable {
		t.Errorf("replay with Redis 1s away: %d %s, want 503", status, body)
	}
	a.waitReady(t, http.StatusServiceUnavailable, 10*time.Second)
	if n := a.payments(t, key); n != 0 {
		t.Errorf("%d payments for the key refused with 503, want none", n)
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	a.waitReady(t, http.StatusOK, 10*time.Second)

	// The refused request's claim may have reached Redis (latency delays
	// the answer, not the script): its retry may meet 409 until the claim
	// is released or its lease ends, never a lost key.
	deadline := time.Now().Add(lease + 5*time.Second)
	for conflicts := 0; ; conflicts++ {
		status, body := a.pay(t, key)
		if status == http.StatusAccepted {
			t.Logf("the refused key got 202 after %d answers 409", conflicts)
			break
		}
		if status != http.StatusConflict || time.Now().After(deadline) {
			t.Fatalf("retry of the refused key after the fault: %d %s, want 202 (409 only within its lease)", status, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := a.payments(t, key); n != 1 {
		t.Errorf("%d payments for the retried key, want 1", n)
	}
	if status, body := a.pay(t, before); status != http.StatusAccepted || !bytes.Equal(body, first) {
		t.Errorf("replay after the fault: %d %s, want 202 %s", status, body, first)
	}
	if n := a.payments(t, before); n != 1 {
		t.Errorf("%d payments for the key paid before the fault, want 1", n)
	}
}
