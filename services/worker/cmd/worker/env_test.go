package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/pkg/message/messagetest"
	"github.com/oncepay/oncepay/services/api/migrations"
	"github.com/oncepay/oncepay/services/psp/pspclient"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/oncepay/oncepay/services/worker/internal/broker"
)

// redisDB is this package's Redis database; the FLUSHDB test empties it.
const redisDB = 3

// env is one test's world: its own payments database, RabbitMQ names,
// merchant (so its Redis keys are its own) and psp process.
type env struct {
	t        testing.TB
	redis    *redis.Client
	redisURL string
	dbURL    string
	db       *pgxpool.Pool
	amqpURL  string
	topo     broker.Topology
	merchant string
	psp      *pspclient.Client
	pspURL   string
	pspAdmin *pspclient.Client // the psp's admin listener, with its token
	pub      *publisher
}

// testDelays are the retry delays the tests run with: short, so retries
// happen within a test's time.
var testDelays = []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, time.Second}

// newEnv sets up an env with a psp started with pspEnv on top of quiet
// defaults (no latency, no faults, idempotency on).
func newEnv(t testing.TB, pspEnv map[string]string) *env {
	t.Helper()
	testenv.Integration(t)
	ctx := context.Background()
	waitAMQP(t)
	e := &env{t: t, amqpURL: testenv.AMQPURL(t), merchant: strings.ReplaceAll(testenv.Name(t, "m"), "-", "_")}

	e.redis = testenv.Redis(t, redisDB)
	u, _ := url.Parse(testenv.RedisURL(t))
	u.Path = fmt.Sprintf("/%d", redisDB)
	e.redisURL = u.String()

	e.dbURL = testenv.NewDatabase(t)
	pool, err := pgxpool.New(ctx, e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := migrations.Apply(ctx, pool); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	e.db = pool

	name := testenv.Name(t, "wk")
	e.topo = broker.Topology{Topology: message.Topology{Exchange: name + ".payments", Queue: name + ".charge", DeliveryLimit: 20}, RetryDelays: testDelays}
	e.declare()
	t.Cleanup(e.deleteTopology)
	e.pub = newPublisher(t, e.amqpURL)

	env := map[string]string{
		"PSP_LISTEN_ADDR": "127.0.0.1:0", "PSP_OPS_ADDR": "127.0.0.1:0", "PSP_DATABASE_URL": testenv.NewDatabase(t),
		"PSP_ADMIN_ADDR": "127.0.0.1:0", "PSP_ADMIN_TOKEN": pspAdminToken,
		"PSP_LATENCY": "0ms", "PSP_LATENCY_JITTER": "0ms", "PSP_SEED": "1", "PSP_SHUTDOWN_GRACE": "2s",
	}
	maps.Copy(env, pspEnv)
	p := startProcess(t, "psp", bins.binary(t, "psp", "github.com/oncepay/oncepay/services/psp/cmd/psp"), env)
	e.pspURL = "http://" + p.addr
	e.psp = pspclient.New(e.pspURL, nil)
	e.pspAdmin = pspclient.NewAdmin("http://"+p.admin, pspAdminToken, nil)
	waitReady(t, p.ops, 10*time.Second)
	return e
}

// pspAdminToken is the test psp's admin token.
const pspAdminToken = "worker-test-psp-admin-token"

// declare declares the test's topology (the worker declares the same).
func (e *env) declare() {
	e.t.Helper()
	conn := dialAMQP(e.t, e.amqpURL)
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.topo.Declare(ch); err != nil {
		e.t.Fatal(err)
	}
}

// deleteTopology removes the test's queues and exchanges.
func (e *env) deleteTopology() {
	var retries []string
	for i := range e.topo.RetryDelays {
		retries = append(retries, e.topo.RetryQueue(i))
	}
	messagetest.DeleteTopology(e.amqpURL, e.topo.Topology, retries...)
}

// workerEnv is the environment of a worker in this env, with extra on top.
func (e *env) workerEnv(instance string, extra map[string]string) map[string]string {
	delays := make([]string, len(testDelays))
	for i, d := range testDelays {
		delays[i] = d.String()
	}
	env := map[string]string{
		"WORKER_LISTEN_ADDR": "127.0.0.1:0", "REDIS_URL": e.redisURL, "DATABASE_URL": e.dbURL,
		"AMQP_URL": e.amqpURL, "PSP_URL": e.pspURL, "AMQP_EXCHANGE": e.topo.Exchange, "AMQP_QUEUE": e.topo.Queue,
		"WORKER_PREFETCH": "8", "WORKER_CONCURRENCY": "4", "WORKER_RETRY_DELAYS": strings.Join(delays, ","),
		"IDEM_LEASE": "3s", "IDEM_TIMEOUT": "300ms", "PSP_TIMEOUT": "5s",
		"SHUTDOWN_GRACE": "5s", "AMQP_RECONNECT_INTERVAL": "500ms", "WORKER_INSTANCE": instance, "LOG_LEVEL": "debug",
	}
	maps.Copy(env, extra)
	return env
}

// payment is a payments row the tests create, as the api would.
type payment struct {
	ID, Key, Customer string
	Amount            int64
}

// newPayment inserts a pending payment of amount for customer.
func (e *env) newPayment(amount int64, customer string) payment {
	e.t.Helper()
	p := payment{ID: "pay_" + randHex(8), Key: "key-" + randHex(8), Customer: customer, Amount: amount}
	now := time.Now()
	_, err := e.db.Exec(context.Background(), `
		INSERT INTO payments (id, merchant_id, idempotency_key, request_fingerprint, amount, currency,
		                      customer_id, response_status, response_body, created_at, updated_at)
		VALUES ($1, $2, $3, 'fp', $4, 'EUR', $5, 202, '{}', $6, $6)`,
		p.ID, e.merchant, p.Key, p.Amount, p.Customer, now)
	if err != nil {
		e.t.Fatalf("insert payment: %v", err)
	}
	return p
}

// message is the payment.initiated message of p, as the api publishes it.
func (e *env) message(p payment) amqp.Publishing {
	m, err := message.PaymentInitiated{PaymentID: p.ID, MerchantID: e.merchant, IdempotencyKey: p.Key,
		Amount: p.Amount, Currency: "EUR", CustomerID: p.Customer}.Encode()
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// publish publishes msg to the exchange times times.
func (e *env) publish(msg amqp.Publishing, times int) {
	e.t.Helper()
	for range times {
		e.pub.publish(e.t, e.topo.Exchange, message.RoutingKey, msg)
	}
}

// row is a payment's outcome as the database holds it.
type row struct {
	Status, Charge, Reason string
}

func (e *env) row(id string) row {
	e.t.Helper()
	var r row
	err := e.db.QueryRow(context.Background(),
		`SELECT status, coalesce(psp_charge_id, ''), coalesce(failure_reason, '') FROM payments WHERE id = $1`, id).
		Scan(&r.Status, &r.Charge, &r.Reason)
	if err != nil {
		e.t.Fatalf("read payment %s: %v", id, err)
	}
	return r
}

// waitTerminal waits until every payment in ids is succeeded or failed.
func (e *env) waitTerminal(within time.Duration, ids ...string) {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for {
		var pending []string
		rows, err := e.db.Query(context.Background(), `SELECT id FROM payments WHERE id = ANY($1) AND status = 'pending'`, ids)
		if err == nil {
			for rows.Next() {
				var id string
				_ = rows.Scan(&id)
				pending = append(pending, id)
			}
			rows.Close()
		}
		if err == nil && len(pending) == 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%d of %d payments still pending after %s: %v (err %v)", len(pending), len(ids), within, pending, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ledger returns the psp's ledger for one payment.
func (e *env) ledger(id string) pspclient.Ledger {
	e.t.Helper()
	l, err := e.pspAdmin.Ledger(context.Background(), id)
	if err != nil {
		e.t.Fatalf("psp ledger: %v", err)
	}
	return l
}

// afterLostAnswer waits until the psp has charged payment id and withheld
// its answer (an OutcomeFailAfter call; the env must run with
// PSP_FAIL_AFTER_RATE=1), then turns fail-after off and waits for the
// payment to reach a terminal status.
func (e *env) afterLostAnswer(id string) {
	e.t.Helper()
	eventually(e.t, 10*time.Second, func() string {
		for _, c := range e.ledger(id).Calls {
			if c.Outcome == pspclient.OutcomeFailAfter {
				return ""
			}
		}
		return "no fail_after call yet"
	})
	e.setPSP(pspclient.ConfigPatch{FailAfterRate: new(0.0)})
	e.waitTerminal(15*time.Second, id)
}

// waitClaimed waits up to 10s until a worker holds the charge stage of
// the payment under key: the stage is pending in Redis.
func (e *env) waitClaimed(key string) {
	e.t.Helper()
	hash := "idem:v1:{" + e.merchant + ":" + key + "}"
	eventually(e.t, 10*time.Second, func() string {
		if s, _ := e.redis.HGet(context.Background(), hash, "charge:state").Result(); s != "P" {
			return "no worker claimed the charge stage"
		}
		return ""
	})
}

// wantChargedOnce fails the test (t.Errorf) for each of ids that the psp
// did not charge exactly once, or whose row did not succeed with that
// charge, and returns the ledgers it read, by payment id.
func (e *env) wantChargedOnce(ids ...string) map[string]pspclient.Ledger {
	e.t.Helper()
	ledgers := make(map[string]pspclient.Ledger, len(ids))
	for _, id := range ids {
		l := e.ledger(id)
		ledgers[id] = l
		if len(l.Charges) != 1 {
			e.t.Errorf("payment %s: psp charged %d times, want 1", id, len(l.Charges))
			continue
		}
		if r := e.row(id); r.Status != "succeeded" || r.Charge != l.Charges[0].ID {
			e.t.Errorf("payment %s = %+v, want succeeded with %s", id, r, l.Charges[0].ID)
		}
	}
	return ledgers
}

// setPSP changes the psp's fault knobs.
func (e *env) setPSP(patch pspclient.ConfigPatch) {
	e.t.Helper()
	if _, err := e.pspAdmin.SetConfig(context.Background(), patch); err != nil {
		e.t.Fatalf("psp config: %v", err)
	}
}

// queueDepth returns the number of ready messages in queue.
func (e *env) queueDepth(queue string) int {
	e.t.Helper()
	conn := dialAMQP(e.t, e.amqpURL)
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		e.t.Fatal(err)
	}
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		e.t.Fatalf("inspect %s: %v", queue, err)
	}
	return q.Messages
}

// drain takes every message out of queue (acking them) and returns them.
func (e *env) drain(queue string) []amqp.Delivery {
	e.t.Helper()
	conn := dialAMQP(e.t, e.amqpURL)
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		e.t.Fatal(err)
	}
	var out []amqp.Delivery
	for {
		d, ok, err := ch.Get(queue, true)
		if err != nil {
			e.t.Fatalf("get %s: %v", queue, err)
		}
		if !ok {
			return out
		}
		out = append(out, d)
	}
}

// eventually polls cond every 50ms until it returns "" or within passes.
func eventually(t testing.TB, within time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// publisher publishes test messages with confirms; it redials after a
// broker restart.
type publisher struct {
	url  string
	conn *amqp.Connection
	ch   *amqp.Channel
}

func newPublisher(t testing.TB, url string) *publisher {
	p := &publisher{url: url}
	t.Cleanup(func() {
		if p.conn != nil {
			p.conn.Close()
		}
	})
	return p
}

func (p *publisher) publish(t testing.TB, exchange, key string, msg amqp.Publishing) {
	t.Helper()
	deadline := time.Now().Add(amqpPatience) // a broker restart takes about 15s
	for {
		err := p.try(exchange, key, msg)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("publish: %v", err)
		}
		if p.conn != nil {
			p.conn.Close()
		}
		p.conn, p.ch = nil, nil
		time.Sleep(250 * time.Millisecond)
	}
}

func (p *publisher) try(exchange, key string, msg amqp.Publishing) error {
	if p.ch == nil {
		conn, err := amqp.Dial(p.url)
		if err != nil {
			return err
		}
		ch, err := conn.Channel()
		if err == nil {
			err = ch.Confirm(false)
		}
		if err != nil {
			conn.Close()
			return err
		}
		p.conn, p.ch = conn, ch
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dc, err := p.ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, true, false, msg)
	if err != nil {
		return err
	}
	ok, err := dc.WaitContext(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("publish nacked")
	}
	return nil
}

// The harness is shared: another package's fault test may be restarting
// RabbitMQ right now. The test's own connections wait that out (30s) before
// failing.
const amqpPatience = 30 * time.Second

// waitAMQP waits until AMQP_URL accepts a connection, at most amqpPatience;
// testenv.AMQPURL then fails with its hint if it still does not.
func waitAMQP(t testing.TB) {
	t.Helper()
	u := os.Getenv("AMQP_URL")
	for deadline := time.Now().Add(amqpPatience); u != "" && time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if c, err := amqp.Dial(u); err == nil {
			c.Close()
			return
		}
	}
}

// dialAMQP connects to url, retrying for amqpPatience.
func dialAMQP(t testing.TB, url string) *amqp.Connection {
	t.Helper()
	deadline := time.Now().Add(amqpPatience)
	for {
		conn, err := amqp.Dial(url)
		if err == nil {
			return conn
		}
		if time.Now().After(deadline) {
			t.Fatalf("rabbitmq: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
