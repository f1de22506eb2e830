package reconcile

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of worker_reconcile_total, one per payment a round looked at.
const (
	Settled             = "settled"              // the psp had a charge or decline; the payment is settled by it
	Redriven            = "redriven"             // the psp had nothing; the charge handler ran (see its outcome in the log)
	InProgress          = "in_progress"          // another owner holds the charge stage; skipped this round
	AlreadySettled      = "already_settled"      // terminal by the time it was claimed
	PSPUnavailable      = "psp_unavailable"      // the psp did not answer the lookup; left pending, the round stops
	BoundaryUnavailable = "boundary_unavailable" // the stage could not be claimed; the round stops
	Failed              = "error"                // anything else (database, a charge that disagrees with the row); logged
)

// Metrics are the reconciler's metrics.
type Metrics struct {
	oldestPending prometheus.Gauge
	results       *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		oldestPending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "payments_oldest_pending_age_seconds",
			Help: "Age of the oldest payment still pending, read from Postgres every reconcile round; 0 when none is.",
		}),
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "worker_reconcile_total",
			Help: "Pending payments the reconciler looked at, by result.",
		}, []string{"result"}),
	}
	for _, res := range []string{Settled, Redriven, InProgress, AlreadySettled, PSPUnavailable, BoundaryUnavailable, Failed} {
		m.results.WithLabelValues(res)
	}
	for _, c := range []prometheus.Collector{m.oldestPending, m.results} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register reconcile metrics: %w", err)
		}
	}
	return m, nil
}
