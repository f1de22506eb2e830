package conform_test

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
	"github.com/oncepay/oncepay/loadtest/conform"
	"github.com/oncepay/oncepay/services/api/migrations"
)

// oncepayAPI is the real api binary, started for one test.
type oncepayAPI struct {
	base, ops string
	merchants [2]string // merchant ids, credential a and b
	redisURL  string    // its own database of the harness Redis
	pool      *pgxpool.Pool
	logs      *lines
}

// redisDB is this package's database of the harness Redis.
const redisDB = 13

type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.Write(p) }
func (l *lines) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

// startOncepay builds the api (with tags, e.g. "compare") and runs it on
// the harness services with its own database, merchants and exchange;
// it waits for /readyz and stops it at cleanup.
func startOncepay(t *testing.T, tags string, extra map[string]string) *oncepayAPI {
	t.Helper()
	testenv.Integration(t)
	bin := filepath.Join(t.TempDir(), "api")
	argv := []string{"go", "build", "-o", bin}
	if tags != "" {
		argv = append(argv, "-tags", tags)
	}
	build := proc.Spec{Name: "go build api", Argv: append(argv, "github.com/oncepay/oncepay/services/api/cmd/api")}
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
	redisURL, err := url.Parse(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	redisURL.Path = fmt.Sprintf("/%d", redisDB)
	a := &oncepayAPI{pool: pool, logs: &lines{}, redisURL: redisURL.String()}
	for i := range a.merchants {
		a.merchants[i] = strings.ReplaceAll(testenv.Name(t, fmt.Sprintf("m%d", i)), "-", "_")
	}
	env := map[string]string{
		"API_LISTEN_ADDR": "127.0.0.1:0", "API_OPS_ADDR": "127.0.0.1:0", "REDIS_URL": a.redisURL, "DATABASE_URL": dbURL,
		"AMQP_URL": testenv.AMQPURL(t), "AMQP_EXCHANGE": testenv.Name(t, "payments"), "AMQP_QUEUE": testenv.Name(t, "payments") + ".charge",
		"API_MERCHANT_KEYS": a.merchants[0] + "=sk_test_" + a.merchants[0] + "," + a.merchants[1] + "=sk_test_" + a.merchants[1],
		"API_INSTANCE":      "conform", "SHUTDOWN_GRACE": "5s", "IDEM_LEASE": "2s", "PATH": os.Getenv("PATH"),
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
			t.Logf("api logs (last 8 KiB):\n%s", tail(a.logs.String(), 8192))
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
	deadline := time.Now().Add(15 * time.Second)
	for {
		if resp, err := http.Get(a.ops + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return a
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz not 200 within 15s\n%s", a.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// target points conform at the api, reading effects from its payments
// table (the merchant names are the test's own, safe in the SQL).
func (a *oncepayAPI) target() conform.Target {
	return conform.Target{
		URL:         a.base + "/v1/payments",
		Header:      http.Header{"Authorization": {"Bearer sk_test_" + a.merchants[0]}, "Content-Type": {"application/json"}},
		OtherHeader: http.Header{"Authorization": {"Bearer sk_test_" + a.merchants[1]}},
		Body:        `{"amount": 1250, "currency": "EUR", "customer_id": "cus_conform", "description": "{{vary}}"}`,
		Effects: conform.EffectSQL{Pool: a.pool, Query: fmt.Sprintf(`SELECT count(*) FROM payments WHERE idempotency_key = $1
			AND merchant_id = CASE $2 WHEN 'a' THEN '%s' ELSE '%s' END`, a.merchants[0], a.merchants[1])},
		Storm: conform.Storm{Keys: 40, Clients: 4},
	}
}

// flushDuringStorm makes tgt's storm flush the api's Redis database four
// times: every key the boundary held is forgotten mid-storm.
func (a *oncepayAPI) flushDuringStorm(tgt conform.Target) conform.Target {
	tgt.Storm.FaultCommand = "redis-cli -u '" + a.redisURL + "' FLUSHDB"
	tgt.Storm.FaultAt = []time.Duration{300 * time.Millisecond, 900 * time.Millisecond, 1500 * time.Millisecond, 2500 * time.Millisecond}
	return tgt
}

// oncepay's api passes every applicable rule, with its Redis flushed
// during the storm; the two rules it gives no input for (a 5xx knob, an
// expiry policy URL) are n/a.
func TestOncepayAPIConforms(t *testing.T) {
	a := startOncepay(t, "", nil)
	rep := conform.Run(t, a.flushDuringStorm(a.target()))
	if n := len(rep.Storm.Faults); n != 4 {
		t.Errorf("%d faults ran, want 4", n)
	}
	for _, f := range rep.Storm.Faults {
		if f.Err != "" || !strings.Contains(f.Output, "OK") {
			t.Errorf("fault at %s: %q %s", f.At, f.Output, f.Err)
		}
	}
	for _, row := range rep.Rows {
		wantNA := row.ID == "5xx-not-cached" || row.ID == "expiry"
		if (row.Result == conform.NA) != wantNA {
			t.Errorf("row %s: %s (%s), want n/a %v", row.ID, row.Result, row.Detail, wantNA)
		}
		if row.Result == conform.Fail {
			t.Errorf("row %s (profile included) failed: %s", row.ID, row.Detail)
		}
	}
	if rep.Storm == nil || rep.Storm.Effects[1] != 40 {
		t.Errorf("storm effects per key = %v, want 40 keys with 1", rep.Storm.Effects)
	}
}
