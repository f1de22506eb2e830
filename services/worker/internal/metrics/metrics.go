// Package metrics holds the worker's Prometheus metrics, registered on a
// Registerer the caller passes in. docs/worker.md lists them.
package metrics

import (
	"fmt"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of worker_messages_total, one per settled delivery.
const (
	Charged         = "charged"           // psp charged, payment succeeded
	Declined        = "declined"          // psp declined, payment failed with the decline code
	Duplicate       = "duplicate"         // already done (boundary or database said so); acked
	InProgressRetry = "in_progress_retry" // another owner holds the lease; delayed retry
	LostLease       = "lost_lease"        // the lease was lost mid-work; nothing written; delayed retry
	TransientRetry  = "transient_retry"   // psp or database failed transiently; delayed retry
	DeadLettered    = "dead_lettered"     // poison: undecodable or invalid; in the DLQ
	RedisDown       = "redis_unavailable" // the boundary could not be reached; delayed retry (fail closed)
	Rejected        = "rejected"          // psp rejected the request for good, payment failed with its reason
)

// Outcomes lists every outcome label, in the order above.
func Outcomes() []string {
	return []string{Charged, Declined, Duplicate, InProgressRetry, LostLease, TransientRetry, DeadLettered, RedisDown, Rejected}
}

// Reasons a delivery is not settled at all (worker_settle_skipped_total).
const (
	SkipStale    = "stale"    // read on a channel session that was lost since; the broker requeued it
	SkipShutdown = "shutdown" // not finished within the shutdown grace; redelivered after the channel closes
)

// Results of idem_lease_end_retries_total: how a Complete or Release that
// Redis did not answer at first ended after the in-process retry.
const (
	EndRecovered = "recovered" // a retry got through
	EndLost      = "lost"      // another owner had taken the stage over (nothing written)
	EndGaveUp    = "gave_up"   // still unavailable when the retry time ran out
)

// Metrics are the worker's metrics. Methods are safe for concurrent use.
type Metrics struct {
	messages     *prometheus.CounterVec
	skipped      *prometheus.CounterVec
	processing   prometheus.Histogram
	pspCall      *prometheus.HistogramVec
	takeovers    prometheus.Counter
	redeliveries prometheus.Counter
	boundary     *prometheus.CounterVec
	endRetries   *prometheus.CounterVec
}

// New creates the metrics and registers them on reg.
func New(reg prometheus.Registerer) (*Metrics, error) {
	buckets := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	m := &Metrics{
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "worker_messages_total",
			Help: "Deliveries settled, by outcome.",
		}, []string{"outcome"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "worker_settle_skipped_total",
			Help: "Deliveries deliberately left unsettled (stale channel session, shutdown), by reason.",
		}, []string{"reason"}),
		processing: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "worker_processing_duration_seconds",
			Help:    "Time the handler spent on one delivery.",
			Buckets: buckets,
		}),
		pspCall: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "worker_psp_call_duration_seconds",
			Help:    "Duration of psp charge calls, by result (succeeded, declined, error).",
			Buckets: buckets,
		}, []string{"result"}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "worker_lease_takeovers_total",
			Help: "Charge stages claimed over an expired lease (the previous owner crashed or stalled).",
		}),
		redeliveries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "worker_redeliveries_total",
			Help: "Deliveries the broker marked as redelivered (redelivered flag or x-delivery-count > 0).",
		}),
		boundary: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idem_boundary_outcomes_total",
			Help: "Idempotency boundary operations, by stage and outcome.",
		}, []string{"stage", "outcome"}),
		endRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idem_lease_end_retries_total",
			Help: "Complete or Release calls that Redis did not answer at first and were retried, by op and how the retry ended.",
		}, []string{"op", "result"}),
	}
	for _, c := range []prometheus.Collector{m.messages, m.skipped, m.processing, m.pspCall, m.takeovers, m.redeliveries, m.boundary, m.endRetries} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	for _, o := range Outcomes() {
		m.messages.WithLabelValues(o)
	}
	for _, r := range []string{SkipStale, SkipShutdown} {
		m.skipped.WithLabelValues(r)
	}
	for _, op := range []idem.Op{idem.OpComplete, idem.OpRelease} {
		for _, r := range []string{EndRecovered, EndLost, EndGaveUp} {
			m.endRetries.WithLabelValues(string(op), r)
		}
	}
	return m, nil
}

// Settled counts one settled delivery.
func (m *Metrics) Settled(outcome string) { m.messages.WithLabelValues(outcome).Inc() }

// Skipped counts one delivery left unsettled on purpose.
func (m *Metrics) Skipped(reason string) { m.skipped.WithLabelValues(reason).Inc() }

// Processed records the handler time of one delivery.
func (m *Metrics) Processed(d time.Duration) { m.processing.Observe(d.Seconds()) }

// PSPCall records one psp charge call.
func (m *Metrics) PSPCall(result string, d time.Duration) {
	m.pspCall.WithLabelValues(result).Observe(d.Seconds())
}

// TakeOver counts one lease takeover.
func (m *Metrics) TakeOver() { m.takeovers.Inc() }

// Redelivered counts one redelivery.
func (m *Metrics) Redelivered() { m.redeliveries.Inc() }

// Boundary is an idem.Config.Observe hook.
func (m *Metrics) Boundary(e idem.Event) { m.boundary.WithLabelValues(e.Stage, e.Outcome).Inc() }

// LeaseEndRetried counts one Complete or Release (op) that was retried
// because Redis did not answer, by how it ended (EndRecovered, EndLost,
// EndGaveUp).
func (m *Metrics) LeaseEndRetried(op idem.Op, result string) {
	m.endRetries.WithLabelValues(string(op), result).Inc()
}
