package httpapi

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oncepay/oncepay/services/psp/internal/charge"
)

// Metrics are the simulator's Prometheus metrics.
type Metrics struct {
	calls    *prometheus.CounterVec
	charges  prometheus.Counter
	duration *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them on reg:
// psp_calls_total{outcome}, psp_charges_total and
// psp_request_duration_seconds{method,route,code}. It fails if any is
// already registered on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "psp_calls_total",
			Help: "Calls to POST /v1/charges by ledger outcome.",
		}, []string{"outcome"}),
		charges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "psp_charges_total",
			Help: "Effective charges recorded (outcomes charged and fail_after).",
		}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "psp_request_duration_seconds",
			Help:    "HTTP request duration; code is \"none\" when the connection was dropped without an answer.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route", "code"}),
	}
	for _, c := range []prometheus.Collector{m.calls, m.charges, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	for _, o := range charge.Outcomes() {
		m.calls.WithLabelValues(string(o)) // export zeros
	}
	return m, nil
}

// call counts one recorded call.
func (m *Metrics) call(o charge.Outcome) {
	m.calls.WithLabelValues(string(o)).Inc()
	if o == charge.OutcomeCharged || o == charge.OutcomeFailAfter {
		m.charges.Inc()
	}
}
