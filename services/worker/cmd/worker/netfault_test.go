package main

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/loadtest/netfault"
)

// viaProxy creates replica's proxy to service's host:port in rawURL and
// returns rawURL with that host:port replaced by the proxy's address.
func viaProxy(t testing.TB, in *netfault.Injector, replica, service, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := in.CreateProxy(replica, service, "127.0.0.1:0", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = addr
	return u.String()
}

// logTime returns the time of the first log line of w that contains every
// one of subs, or the zero time.
func logTime(s *logSink, subs ...string) time.Time {
	for _, l := range s.Lines() {
		all := true
		for _, sub := range subs {
			all = all && strings.Contains(l, sub)
		}
		if !all {
			continue
		}
		var rec struct{ Time time.Time }
		if json.Unmarshal([]byte(l), &rec) == nil {
			return rec.Time
		}
	}
	return time.Time{}
}

// A worker whose path to Redis is partitioned (a blackhole: its
// connections stay open, nothing arrives) in the middle of a psp call
// loses its lease, stops and writes nothing; another worker that reaches
// Redis takes the stage over only after that, and the payment is charged
// once.
func TestPartitionedWorkerStopsBeforeTakeover(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"PSP_LATENCY": "4s"})
	in := netfault.New(testenv.Toxiproxy(t))
	short := map[string]string{"IDEM_LEASE": "2s", "IDEM_TIMEOUT": "300ms"}
	cutEnv := map[string]string{"REDIS_URL": viaProxy(t, in, "worker-a", netfault.Redis, e.redisURL)}
	for k, v := range short {
		cutEnv[k] = v
	}
	a := e.startWorker("worker-a", cutEnv)

	p := e.newPayment(2600, "cus_partition")
	e.publish(e.message(p), 1)
	e.waitClaimed(p.Key)
	time.Sleep(300 * time.Millisecond) // inside the 4s psp call now
	undo, err := in.Partition("worker-a", netfault.Redis)
	if err != nil {
		t.Fatal(err)
	}
	defer undo()
	b := e.startWorker("worker-b", short) // reaches Redis directly
	e.waitTerminal(40*time.Second, p.ID)

	lost := logTime(a.logs, "lease lost", p.ID)
	took := logTime(b.logs, "took over an expired lease", p.ID)
	if lost.IsZero() {
		t.Errorf("worker-a never logged that it lost the lease of %s", p.ID)
	}
	if took.IsZero() {
		t.Errorf("worker-b never logged a takeover of %s", p.ID)
	}
	if !lost.IsZero() && !took.IsZero() && !lost.Before(took) {
		t.Errorf("worker-a stopped at %s, worker-b took over at %s: two owners for %s",
			lost.Format(time.StampMilli), took.Format(time.StampMilli), took.Sub(lost))
	} else if !lost.IsZero() && !took.IsZero() {
		t.Logf("worker-a stopped %s before worker-b took over", took.Sub(lost).Round(time.Millisecond))
	}
	l := e.ledger(p.ID)
	if len(l.Charges) != 1 {
		t.Fatalf("psp charged %d times, want 1: %+v", len(l.Charges), l)
	}
	if r := e.row(p.ID); r.Status != "succeeded" || r.Charge != l.Charges[0].ID {
		t.Errorf("payment = %+v, want succeeded with %s", r, l.Charges[0].ID)
	}
}

// Connections reset on a worker's psp path after the psp has acted (the
// charge is made, its answer lost): the worker retries under the same key
// and every payment is charged exactly once.
func TestPSPResetsAreRetriedAndChargedOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	in := netfault.New(testenv.Toxiproxy(t))
	w := e.startWorker("worker-a", map[string]string{"PSP_URL": viaProxy(t, in, "worker-a", netfault.PSP, e.pspURL)})
	undo, err := in.ResetPeer("worker-a", netfault.PSP)
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	ids := make([]string, n)
	for i := range ids {
		p := e.newPayment(int64(100+i), "cus_reset")
		ids[i] = p.ID
		e.publish(e.message(p), 1)
	}
	// every payment reached the psp at least once, and no answer came back
	eventually(t, 20*time.Second, func() string {
		for _, id := range ids {
			if l := e.ledger(id); len(l.Calls) == 0 {
				return "a payment never reached the psp: " + id
			}
		}
		return ""
	})
	for _, id := range ids {
		if r := e.row(id); r.Status != "pending" {
			t.Errorf("payment %s is %s while every psp answer is reset; want pending", id, r.Status)
		}
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	e.waitTerminal(30*time.Second, ids...)
	for id, l := range e.wantChargedOnce(ids...) {
		if len(l.Calls) < 2 {
			t.Errorf("payment %s: %d psp calls, want the reset one and a retry", id, len(l.Calls))
		}
	}
	waitSettled(t, 10*time.Second, n, w)
	if got := w.metric(t, outcome("charged")); got != n {
		t.Errorf("worker charged %v messages, want %d", got, n)
	}
}

// A slow Postgres on the worker's path (every answer 300ms late) delays
// the charges but loses none and charges none twice.
func TestSlowPostgresDelaysButLosesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	in := netfault.New(testenv.Toxiproxy(t))
	w := e.startWorker("worker-a", map[string]string{"DATABASE_URL": viaProxy(t, in, "worker-a", netfault.Postgres, e.dbURL)})
	undo, err := in.Slow("worker-a", netfault.Postgres, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer undo()
	const n = 6
	ids := make([]string, n)
	start := time.Now()
	for i := range ids {
		p := e.newPayment(int64(200+i), "cus_slowpg")
		ids[i] = p.ID
		e.publish(e.message(p), 1)
	}
	e.waitTerminal(60*time.Second, ids...)
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("%d payments settled in %s through a Postgres 300ms slow; the fault did not land", n, took)
	}
	e.wantChargedOnce(ids...)
	waitSettled(t, 10*time.Second, n, w)
	if got := w.metric(t, outcome("charged")); got != n {
		t.Errorf("worker charged %v messages, want %d", got, n)
	}
}
