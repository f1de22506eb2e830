package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/oncepay/oncepay/services/psp/pspclient"

	"github.com/oncepay/oncepay/services/worker/internal/metrics"
)

// A psp outage that outlasts every retry delay many times over parks
// nothing: the worker keeps retrying at the last delay, the dead-letter
// queue stays empty, and once the psp answers again every payment is
// charged exactly once and settled.
func TestPSPOutageLongerThanTheRetryDelays(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"PSP_FAIL_BEFORE_RATE": "1"})
	// WORKER_MAX_ATTEMPTS is not a setting of this worker: a worker that
	// dead-lettered after a retry budget would do so at the third attempt,
	// well within the outage.
	w := e.startWorker("outage", map[string]string{"WORKER_MAX_ATTEMPTS": "3"})
	const n = 4
	var ids []string
	for i := range n {
		p := e.newPayment(int64(1000+i), fmt.Sprintf("cus_outage_%d", i))
		ids = append(ids, p.ID)
		e.publish(e.message(p), 1)
	}

	// Every payment goes through all the delays and then the last one again
	// several times: len(testDelays)+3 failed attempts each.
	want := float64(n * (len(testDelays) + 3))
	eventually(t, 30*time.Second, func() string {
		if d := e.queueDepth(e.topo.DeadLetterQueue()); d != 0 {
			t.Fatalf("%d messages dead-lettered during the outage", d)
		}
		if got := w.metric(t, outcome(metrics.TransientRetry)); got < want {
			return fmt.Sprintf("%v of %v failed attempts so far", got, want)
		}
		return ""
	})
	e.setPSP(pspclient.ConfigPatch{FailBeforeRate: new(0.0)})
	e.waitTerminal(15*time.Second, ids...)

	e.wantChargedOnce(ids...)
	time.Sleep(2 * testDelays[len(testDelays)-1]) // a late retry copy would arrive by now
	if d := e.queueDepth(e.topo.DeadLetterQueue()); d != 0 {
		t.Errorf("%d messages in the dead-letter queue, want 0", d)
	}
	if got := w.metric(t, outcome(metrics.DeadLettered)); got != 0 {
		t.Errorf("dead_lettered = %v, want 0", got)
	}
}
