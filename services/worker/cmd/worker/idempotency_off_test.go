package main

import (
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/services/worker/internal/metrics"
)

// With the psp's idempotency OFF (every call charges anew) and duplicates
// and redeliveries injected, each payment is still charged once: the
// boundary alone holds.
func TestBoundaryAloneWithoutPSPIdempotency(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"PSP_IDEMPOTENCY": "false", "PSP_LATENCY": "100ms", "PSP_LATENCY_JITTER": "80ms"})
	ws := []*worker{e.startWorker("noidem-0", nil), e.startWorker("noidem-1", nil), e.startWorker("noidem-2", nil)}

	// A rogue consumer on the same queue nacks (requeues) what it gets:
	// injected redeliveries, carrying x-delivery-count.
	ctx, stopChaos := context.WithCancel(context.Background())
	t.Cleanup(stopChaos)
	chaosDone := make(chan int, 1)
	go func() { chaosDone <- requeueSome(ctx, t, e.amqpURL, e.topo.Queue, 40) }()

	const n = 15
	var ids []string
	for i := range n {
		p := e.newPayment(300+int64(i), "cus_noidem")
		ids = append(ids, p.ID)
		e.publish(e.message(p), 4)
	}
	e.waitTerminal(45*time.Second, ids...)
	stopChaos()
	requeued := <-chaosDone
	waitSettled(t, 20*time.Second, 4*n, ws...)

	s, err := e.pspAdmin.Summary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if s.Charges != n || len(s.ReferencesChargedMoreThanOnce) != 0 {
		t.Errorf("psp: %d charges (want %d), charged more than once: %v", s.Charges, n, s.ReferencesChargedMoreThanOnce)
	}
	if s.Calls != n {
		t.Errorf("psp calls = %d, want %d (the boundary let only one call per payment through)", s.Calls, n)
	}
	red := sum(t, "worker_redeliveries_total", ws...)
	if requeued == 0 || red == 0 {
		t.Errorf("injected %d requeues, workers saw %v redeliveries: the fault did not land", requeued, red)
	}
	t.Logf("requeued %d, redeliveries seen %v, duplicates %v", requeued, red, sum(t, outcome(metrics.Duplicate), ws...))
}

// requeueSome consumes queue and nacks with requeue up to max deliveries (or
// until ctx ends), and returns how many it requeued.
func requeueSome(ctx context.Context, t testing.TB, url, queue string, max int) int {
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Errorf("chaos consumer: %v", err)
		return 0
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Errorf("chaos consumer: %v", err)
		return 0
	}
	_ = ch.Qos(4, 0, false)
	ds, err := ch.Consume(queue, "chaos", false, false, false, false, nil)
	if err != nil {
		t.Errorf("chaos consumer: %v", err)
		return 0
	}
	n := 0
	for n < max {
		select {
		case <-ctx.Done():
			return n
		case d, ok := <-ds:
			if !ok {
				return n
			}
			if d.Nack(false, true) == nil {
				n++
			}
		}
	}
	return n
}
