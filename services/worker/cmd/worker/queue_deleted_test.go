package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The charge queue is deleted, a few times, while payments stream through
// the real api (its outbox publishes, mandatory, and its relay and sweeper
// publish again) to a real worker. The worker's consumer is cancelled by
// the broker each time; it declares the topology again and goes on
// consuming, and the api declares the queue again when its publishes come
// back unroutable. Messages that were ready in the deleted queue are gone
// with it; the api's sweeper publishes them again. Nothing is lost: every
// payment is charged exactly once and every outbox row ends published.
func TestChargeQueueDeletedUnderLoad(t *testing.T) {
	e := newEnv(t, map[string]string{"PSP_LATENCY": "20ms"})
	w := e.startWorker("qdel-0", nil)
	api := e.startAPI()

	const (
		deletions = 3
		every     = 1500 * time.Millisecond
		rate      = 40 // payments per second
	)
	ctx, stop := context.WithCancel(context.Background())
	var (
		mu  sync.Mutex
		ids []string
		wg  sync.WaitGroup
	)
	wg.Go(func() {
		tick := time.NewTicker(time.Second / rate)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			id := api.pay(t, "qdel-"+strconv.Itoa(i), int64(100+i))
			mu.Lock()
			ids = append(ids, id)
			mu.Unlock()
		}
	})
	conn := dialAMQP(t, e.amqpURL)
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	for range deletions {
		time.Sleep(every)
		n, err := ch.QueueDelete(e.topo.Queue, false, false, false)
		if err != nil {
			t.Fatalf("delete the charge queue: %v", err)
		}
		t.Logf("deleted %s with %d ready messages", e.topo.Queue, n)
	}
	time.Sleep(every)
	stop()
	wg.Wait()

	e.waitTerminal(60*time.Second, ids...)
	select {
	case err := <-w.done:
		t.Fatalf("the worker stopped: %v", err)
	default:
	}
	eventually(t, 10*time.Second, func() string {
		var n int
		if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&n); err != nil {
			return err.Error()
		}
		if n != 0 {
			return fmt.Sprintf("%d outbox rows unpublished", n)
		}
		return ""
	})
	s, err := e.pspAdmin.Summary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if s.Charges != int64(len(ids)) || len(s.ReferencesChargedMoreThanOnce) != 0 {
		t.Errorf("psp: %d charges for %d payments, charged more than once: %v", s.Charges, len(ids), s.ReferencesChargedMoreThanOnce)
	}
	if c := w.logs.count("subscribed again"); c < 1 {
		t.Errorf("the worker never subscribed again")
	}
	t.Logf("%d payments; worker resubscribed %d times; api: %d publishes returned, %d messages swept",
		len(ids), w.logs.count("subscribed again"), api.logs.count("returned unroutable"), api.logs.count("outbox sweep: payment still pending"))
}

// apiProcess is the api binary running on e's database, Redis and broker.
type apiProcess struct {
	*process
	key string
}

// startAPI starts the api for e's merchant, with a fast relay and sweeper,
// and extra's variables on top.
func (e *env) startAPI(extra ...map[string]string) *apiProcess {
	e.t.Helper()
	key := "sk_test_" + e.merchant
	env := map[string]string{
		"API_LISTEN_ADDR": "127.0.0.1:0", "API_OPS_ADDR": "127.0.0.1:0", "REDIS_URL": e.redisURL, "DATABASE_URL": e.dbURL, "AMQP_URL": e.amqpURL,
		"API_MERCHANT_KEYS": e.merchant + "=" + key, "AMQP_EXCHANGE": e.topo.Exchange, "AMQP_QUEUE": e.topo.Queue,
		"AMQP_DELIVERY_LIMIT": strconv.Itoa(e.topo.DeliveryLimit), "OUTBOX_RELAY_INTERVAL": "200ms",
		"OUTBOX_RELAY_AGE": "500ms", "OUTBOX_SWEEP_INTERVAL": "500ms", "OUTBOX_SWEEP_AGE": "3s",
		"OUTBOX_SWEEP_LIMIT": "5", "SHUTDOWN_GRACE": "5s", "LOG_LEVEL": "debug",
	}
	for _, x := range extra {
		maps.Copy(env, x)
	}
	p := startProcess(e.t, "api", bins.binary(e.t, "api", "github.com/oncepay/oncepay/services/api/cmd/api"), env)
	waitReady(e.t, p.ops, 10*time.Second)
	return &apiProcess{process: p, key: key}
}

// pay creates a payment through the api and returns its id.
func (a *apiProcess) pay(t testing.TB, idemKey string, amount int64) string {
	return a.payFor(t, idemKey, amount, "cus_qdel")
}

// payFor creates a payment of customer through the api and returns its id.
func (a *apiProcess) payFor(t testing.TB, idemKey string, amount int64, customer string) string {
	body, _ := json.Marshal(map[string]any{"amount": amount, "currency": "EUR", "customer_id": customer})
	req, _ := http.NewRequest(http.MethodPost, "http://"+a.addr+"/v1/payments", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Idempotency-Key", idemKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("POST /v1/payments: %v", err)
		return ""
	}
	defer resp.Body.Close()
	var p struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Errorf("POST /v1/payments: %s, id %q, %v", resp.Status, p.ID, err)
	}
	return p.ID
}
