package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/pkg/message/messagetest"
	"github.com/oncepay/oncepay/services/api/migrations"
	"github.com/redis/go-redis/v9"
)

// redisDB is this module's Redis database; FLUSHDB in its tests touches no
// other package's keys.
const redisDB = 2

// api is one api process, started through run on port 0 for one test, with
// its own Postgres database, RabbitMQ exchange and merchants.
type api struct {
	base      string // http://127.0.0.1:port, the payments port
	ops       string // http://127.0.0.1:port, the ops listener (/livez, /readyz, /metrics)
	pool      *pgxpool.Pool
	rdb       *redis.Client // database redisDB
	amqpURL   string
	exchange  string
	merchantA string
	merchantB string
	keys      map[string]string // merchant -> API key
	logs      *logSink
	stop      context.CancelFunc // what SIGTERM does
	exited    chan struct{}      // closed when run has returned
	err       error              // what run returned, once exited is closed
}

type apiOptions struct {
	env            map[string]string // overrides of the test defaults
	migrateOnStart bool              // let the api migrate (API_MIGRATE_ON_START) instead of the test
	notReady       bool              // do not wait for /readyz 200, only for /livez
}

// startAPI runs the api until the test ends and waits until it is ready.
// At cleanup it stops the api and fails the test if run returned an error.
func startAPI(t testing.TB, o apiOptions) *api {
	t.Helper()
	testenv.Integration(t)
	dbURL := testenv.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if !o.migrateOnStart {
		if _, err := migrations.Apply(context.Background(), pool); err != nil {
			t.Fatal(err)
		}
	}
	redisURL, err := url.Parse(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	redisURL.Path = fmt.Sprintf("/%d", redisDB)

	a := &api{
		pool:      pool,
		rdb:       testenv.Redis(t, redisDB),
		amqpURL:   testenv.AMQPURL(t),
		exchange:  testenv.Name(t, "payments"),
		merchantA: testenv.Name(t, "ma"),
		merchantB: testenv.Name(t, "mb"),
		logs:      newLogSink(),
		exited:    make(chan struct{}),
	}
	a.keys = map[string]string{a.merchantA: "sk_test_" + a.merchantA, a.merchantB: "sk_test_" + a.merchantB}
	env := map[string]string{
		"API_LISTEN_ADDR":       "127.0.0.1:0",
		"API_OPS_ADDR":          "127.0.0.1:0",
		"REDIS_URL":             redisURL.String(),
		"DATABASE_URL":          dbURL,
		"AMQP_URL":              a.amqpURL,
		"API_MERCHANT_KEYS":     a.merchantA + "=" + a.keys[a.merchantA] + "," + a.merchantB + "=" + a.keys[a.merchantB],
		"AMQP_EXCHANGE":         a.exchange,
		"AMQP_QUEUE":            a.exchange + ".charge",
		"IDEM_RETENTION":        "1h",
		"OUTBOX_RELAY_INTERVAL": "100ms",
		"OUTBOX_RELAY_AGE":      "1s",
		"SHUTDOWN_GRACE":        "10s",
		"API_INSTANCE":          "test",
		"LOG_LEVEL":             "debug",
	}
	if o.migrateOnStart {
		env["API_MIGRATE_ON_START"] = "true"
	}
	for k, v := range o.env {
		env[k] = v
	}
	ctx, stop := context.WithCancel(context.Background())
	a.stop = stop
	var stderr bytes.Buffer
	go func() {
		defer close(a.exited)
		a.err = run(ctx, []string{"api", "serve"}, func(k string) string { return env[k] }, a.logs, &stderr)
	}()
	t.Cleanup(func() {
		stop()
		select {
		case <-a.exited:
			if a.err != nil {
				t.Errorf("run returned %v", a.err)
			}
		case <-time.After(20 * time.Second):
			t.Error("run did not return within 20s of the cancel")
		}
		if t.Failed() {
			t.Logf("api logs:\n%s", a.logs.String())
		}
		messagetest.DeleteTopology(a.amqpURL, message.Topology{Exchange: a.exchange, Queue: a.exchange + ".charge"})
	})

	select {
	case addrs := <-a.logs.listening:
		a.base, a.ops = "http://"+addrs[0], "http://"+addrs[1]
	case <-a.exited:
		t.Fatalf("run returned before listening: %v\n%s", a.err, a.logs.String())
	case <-time.After(15 * time.Second):
		t.Fatalf("api did not listen within 15s\n%s", a.logs.String())
	}
	probe := "/readyz"
	if o.notReady {
		probe = "/livez"
	}
	waitStatus(t, a.ops+probe, http.StatusOK, 15*time.Second)
	return a
}

// waitStatus polls url until it answers status.
func waitStatus(t testing.TB, url string, status int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	last := "no answer"
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == status {
				return
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("GET %s did not answer %d within %s; last: %s", url, status, within, last)
}

// logSink collects the api's JSON log lines and reports the listening
// address. It is safe for concurrent use.
type logSink struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	partial   []byte
	lines     []map[string]any
	listening chan [2]string // the payments and the ops address
}

func newLogSink() *logSink { return &logSink{listening: make(chan [2]string, 1)} }

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		var line map[string]any
		if json.Unmarshal(s.partial[:i], &line) == nil {
			s.lines = append(s.lines, line)
			if line["msg"] == "listening" {
				s.listening <- [2]string{line["addr"].(string), line["ops_addr"].(string)}
			}
		}
		s.partial = s.partial[i+1:]
	}
	return len(p), nil
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// index returns the position of the first line with msg whose attributes
// include attrs, or -1.
func (s *logSink) index(msg string, attrs map[string]any) int {
	s.mu.Lock()
	defer s.mu.Unlock()
next:
	for i, l := range s.lines {
		if l["msg"] != msg {
			continue
		}
		for k, v := range attrs {
			if fmt.Sprint(l[k]) != fmt.Sprint(v) {
				continue next
			}
		}
		return i
	}
	return -1
}

// response is an answer, read completely.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// problem decodes a problem+json body.
func (r response) problem(t *testing.T) problemBody {
	t.Helper()
	var p problemBody
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatalf("body %q is not problem JSON: %v", r.Body, err)
	}
	return p
}

type problemBody struct {
	Type     string       `json:"type"`
	Title    string       `json:"title"`
	Status   int          `json:"status"`
	Detail   string       `json:"detail"`
	Instance string       `json:"instance"`
	Errors   []fieldError `json:"errors"`
}

type fieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// do sends a request. header values are set as given (Set), body is sent
// as is.
func (a *api) do(t testing.TB, method, path string, header map[string]string, body []byte) response {
	t.Helper()
	return a.on(t, a.base, method, path, header, body)
}

// on sends a request to base (a.base or a.ops).
func (a *api) on(t testing.TB, base, method, path string, header map[string]string, body []byte) response {
	t.Helper()
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[http.CanonicalHeaderKey(k)] = []string{v}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// opsGet sends GET path to the ops listener.
func (a *api) opsGet(t *testing.T, path string) response {
	t.Helper()
	return a.on(t, a.ops, http.MethodGet, path, nil, nil)
}

// post creates a payment as merchant with key.
func (a *api) post(t *testing.T, merchant, key, body string) response {
	t.Helper()
	return a.do(t, http.MethodPost, "/v1/payments", map[string]string{
		"Authorization":   "Bearer " + a.keys[merchant],
		"Idempotency-Key": key,
		"Content-Type":    "application/json",
	}, []byte(body))
}

// get reads a payment as merchant.
func (a *api) get(t *testing.T, merchant, id string) response {
	t.Helper()
	return a.do(t, http.MethodGet, "/v1/payments/"+id, map[string]string{"Authorization": "Bearer " + a.keys[merchant]}, nil)
}

// count runs a count(*) query on the api's database.
func (a *api) count(t testing.TB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := a.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// redisKeys returns the boundary keys of merchant in the api's Redis
// database.
func (a *api) redisKeys(t testing.TB, merchant string) []string {
	t.Helper()
	keys, err := a.rdb.Keys(context.Background(), "idem:v1:{"+merchant+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// paymentID returns the id of a created-payment body.
func paymentID(t *testing.T, body []byte) string {
	t.Helper()
	var p struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &p); err != nil || !strings.HasPrefix(p.ID, "pay_") {
		t.Fatalf("body %q has no payment id (%v)", body, err)
	}
	return p.ID
}

// closedAddr returns a local address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// metric returns the value of one sample line of /metrics (name with its
// labels exactly as exposed, e.g. `payments_created_total`), or -1.
func (a *api) metric(t *testing.T, sample string) float64 {
	t.Helper()
	r := a.opsGet(t, "/metrics")
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if ok && name == sample {
			var f float64
			fmt.Sscan(value, &f)
			return f
		}
	}
	return -1
}
