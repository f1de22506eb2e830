package main

import (
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
)

// RabbitMQ restarted mid-run: the workers' connections recover through
// amqp091-go's built-in recovery (same process, same delivery channel), and
// no message is lost: every payment ends terminal, each charged once.
// It restarts a shared service, so it must not run in parallel.
func TestRabbitMQRestartRecovers(t *testing.T) {
	e := newEnv(t, map[string]string{"PSP_LATENCY": "50ms"})
	ws := []*worker{e.startWorker("restart-0", nil), e.startWorker("restart-1", nil)}

	const n = 40
	var ids []string
	publish := func(count int) {
		for range count {
			p := e.newPayment(100+int64(len(ids)), "cus_restart")
			ids = append(ids, p.ID)
			e.publish(e.message(p), 1)
		}
	}
	publish(n / 2)
	testenv.Harness(t, "restart", "rabbitmq")
	publish(n / 2) // the test's publisher redials
	e.waitTerminal(60*time.Second, ids...)

	for _, w := range ws {
		select {
		case err := <-w.done:
			t.Fatalf("%s stopped during the restart: %v", w.name, err)
		default:
		}
		waitReady(t, w.addr, 10*time.Second)
		if c := w.logs.count(`"amqp connection state"`, `"to":"open"`); c < 1 {
			t.Errorf("%s never logged a recovered connection", w.name)
		}
	}
	s, err := e.pspAdmin.Summary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if s.Charges != n || len(s.ReferencesChargedMoreThanOnce) != 0 {
		t.Errorf("psp: %d charges (want %d), charged more than once: %v", s.Charges, n, s.ReferencesChargedMoreThanOnce)
	}
	t.Logf("stale settlements skipped: %v, redeliveries: %v",
		sum(t, `worker_settle_skipped_total{reason="stale"}`, ws...), sum(t, "worker_redeliveries_total", ws...))
	if d := e.queueDepth(e.topo.DeadLetterQueue()); d != 0 {
		t.Errorf("%d messages dead-lettered", d)
	}
}
