package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// One payment's trace, exported over OTLP by real api, worker and psp
// processes, runs from the api's request span through the outbox publish,
// the worker's delivery and its psp call to the psp's span, in one trace
// whose every span names the merchant and the idempotency key. A worker
// SIGKILLed mid-charge: the second worker's delivery joins the same trace,
// and so do both psp calls.
func TestTraceFollowsTheKeyThroughATakeover(t *testing.T) {
	t.Parallel()
	otlp := newOTLPReceiver(t)
	traced := func(env map[string]string) map[string]string {
		out := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.URL, "OTEL_BSP_SCHEDULE_DELAY": "100"}
		maps.Copy(out, env)
		return out
	}
	e := newEnv(t, traced(map[string]string{"PSP_LATENCY": "3s"}))
	apiKey := "trace-test-key-" + randHex(8)
	api := startProcess(t, "api", bins.binary(t, "api", "github.com/oncepay/oncepay/services/api/cmd/api"), traced(map[string]string{
		"API_LISTEN_ADDR": "127.0.0.1:0", "API_OPS_ADDR": "127.0.0.1:0", "REDIS_URL": e.redisURL,
		"DATABASE_URL": e.dbURL, "AMQP_URL": e.amqpURL, "AMQP_EXCHANGE": e.topo.Exchange, "AMQP_QUEUE": e.topo.Queue,
		"API_MERCHANT_KEYS": e.merchant + "=" + apiKey, "API_INSTANCE": "api-1",
	}))
	waitReady(t, api.ops, 10*time.Second)
	bin := bins.binary(t, "worker", "github.com/oncepay/oncepay/services/worker/cmd/worker")
	short := traced(map[string]string{"IDEM_LEASE": "2s", "IDEM_TIMEOUT": "300ms"})
	a := startProcess(t, "worker-a", bin, e.workerEnv("worker-a", short))
	waitReady(t, a.addr, 10*time.Second)

	key := "trace-" + randHex(8)
	id := postPayment(t, api.addr, apiKey, key)
	e.waitClaimed(key)
	time.Sleep(500 * time.Millisecond) // inside the 3s psp call now
	a.kill(t)
	startProcess(t, "worker-b", bin, e.workerEnv("worker-b", short))
	e.waitTerminal(30*time.Second, id)
	if r := e.row(id); r.Status != "succeeded" {
		t.Fatalf("payment %s is %s, want succeeded", id, r.Status)
	}

	var tr []span
	eventually(t, 15*time.Second, func() string {
		tr = traceOf(otlp.Spans(), e.merchant, key)
		if len(tr) == 0 {
			return "no api request span for the key:\n" + dump(otlp.Spans())
		}
		for _, w := range want(tr) {
			if !w.found {
				return "no " + w.what + " in the payment's trace:\n" + dump(tr)
			}
		}
		return ""
	})
	for _, s := range tr {
		if s.Attrs["oncepay.merchant_id"] != e.merchant || s.Attrs["oncepay.idempotency_key"] != key {
			t.Errorf("span %s: merchant %q, key %q; want %q, %q", s, s.Attrs["oncepay.merchant_id"],
				s.Attrs["oncepay.idempotency_key"], e.merchant, key)
		}
	}
}

// traceOf returns every span of the trace whose root is the api's request
// span for (merchant, key), or nil.
func traceOf(spans []span, merchant, key string) []span {
	var id string
	for _, s := range spans {
		if s.Service == "api" && s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.Name == "POST /v1/payments" &&
			s.Attrs["oncepay.merchant_id"] == merchant && s.Attrs["oncepay.idempotency_key"] == key {
			id = s.TraceID
		}
	}
	if id == "" {
		return nil
	}
	var out []span
	for _, s := range spans {
		if s.TraceID == id {
			out = append(out, s)
		}
	}
	return out
}

type wanted struct {
	what  string
	found bool
}

// want checks the trace tr for each span the story needs.
func want(tr []span) []wanted {
	byID := map[string]span{}
	for _, s := range tr {
		byID[s.ID] = s
	}
	find := func(f func(span) bool) (span, bool) {
		for _, s := range tr {
			if f(s) {
				return s, true
			}
		}
		return span{}, false
	}
	count := func(f func(span) bool) int {
		n := 0
		for _, s := range tr {
			if f(s) {
				n++
			}
		}
		return n
	}
	db := func(service, system string) func(span) bool {
		return func(s span) bool {
			return s.Service == service && (s.Attrs["db.system"] == system || s.Attrs["db.system.name"] == system)
		}
	}
	publish, okPublish := find(func(s span) bool { return s.Service == "api" && s.Kind == tracepb.Span_SPAN_KIND_PRODUCER })
	isDelivery := func(s span) bool {
		return s.Service == "worker" && s.Instance == "worker-b" && s.Kind == tracepb.Span_SPAN_KIND_CONSUMER && s.Parent == publish.ID
	}
	_, okDelivery := find(isDelivery)
	server := func(s span) bool {
		return s.Service == "psp" && s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.Name == "POST /v1/charges"
	}
	isClient := func(s span) bool {
		return s.Service == "worker" && s.Instance == "worker-b" && s.Kind == tracepb.Span_SPAN_KIND_CLIENT &&
			s.Attrs["http.request.method"] == "POST" && isDelivery(byID[s.Parent])
	}
	_, okClient := find(isClient)
	_, okServer := find(func(s span) bool { return server(s) && isClient(byID[s.Parent]) })
	return []wanted{
		{"outbox publish span (api, producer)", okPublish},
		{"delivery span of worker-b (consumer, child of the publish)", okPublish && okDelivery},
		{"psp client span of worker-b under its delivery", okDelivery && okClient},
		{"psp server span POST /v1/charges, child of worker-b's client span", okClient && okServer},
		{"psp server span of worker-a's cut-off call (two POST /v1/charges)", count(server) >= 2},
		{"Redis span of the api", count(db("api", "redis")) > 0},
		{"Redis span of worker-b", count(func(s span) bool { return db("worker", "redis")(s) && s.Instance == "worker-b" }) > 0},
		{"Postgres span of the api", count(db("api", "postgresql")) > 0},
		{"Postgres span of the worker", count(db("worker", "postgresql")) > 0},
		{"Postgres span of the psp", count(db("psp", "postgresql")) > 0},
	}
}

// postPayment creates a payment through the api and returns its id.
func postPayment(t testing.TB, addr, apiKey, key string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/payments",
		strings.NewReader(`{"amount":2500,"currency":"EUR","customer_id":"cus_trace"}`))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /v1/payments: %v", err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	var p struct{ ID string }
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(buf.Bytes(), &p) != nil || p.ID == "" {
		t.Fatalf("POST /v1/payments: %d %s, want 202 with an id", resp.StatusCode, buf.String())
	}
	return p.ID
}
