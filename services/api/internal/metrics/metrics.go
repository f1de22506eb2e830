// Package metrics defines the api's Prometheus metrics. New registers them on
// the Registerer it is given; there is no global registry.
package metrics

import (
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics holds every collector of the api. Its fields are safe for
// concurrent use.
type Metrics struct {
	// HTTPRequests counts answered requests by route pattern, method and status.
	HTTPRequests *prometheus.CounterVec
	// HTTPDuration observes request latency by route pattern.
	HTTPDuration *prometheus.HistogramVec
	// IdemOutcomes counts boundary operations by stage, op and outcome.
	IdemOutcomes *prometheus.CounterVec
	// IdemDuration observes the latency of boundary operations by op.
	IdemDuration *prometheus.HistogramVec
	// OutboxBacklog is the number of unpublished outbox rows, as last counted
	// by the relay.
	OutboxBacklog prometheus.Gauge
	// OutboxPublishDuration observes one publish, from send to broker confirm.
	OutboxPublishDuration prometheus.Histogram
	// OutboxPublished counts confirmed publishes by path (inline, relay or
	// sweep).
	OutboxPublished *prometheus.CounterVec
	// OutboxFailures counts publishes that were not confirmed.
	OutboxFailures prometheus.Counter
	// OutboxMarkBatch observes how many confirmed rows one UPDATE marked
	// published (the inline path marks them in batches).
	OutboxMarkBatch prometheus.Histogram
	// PaymentsCreated counts payment rows inserted.
	PaymentsCreated prometheus.Counter
	// PaymentsBackstop counts requests answered by the database backstop
	// after Redis had forgotten the key, by result (replayed or mismatch).
	PaymentsBackstop *prometheus.CounterVec
	// IdemLeaseEndRetries counts the Complete and Release calls that Redis
	// did not answer at first, retried by the request before it answered,
	// by op and how the retry ended (EndRecovered, EndLost, EndGaveUp).
	IdemLeaseEndRetries *prometheus.CounterVec
	// PostgresUnavailable counts requests answered 503 because Postgres
	// could not be reached or did not answer in time.
	PostgresUnavailable prometheus.Counter
	// HTTPShed counts requests refused at once with 503 because the
	// payment routes already had API_MAX_INFLIGHT requests in flight.
	HTTPShed prometheus.Counter
	// HTTPInFlight is the number of requests admitted on the payment
	// routes and not yet answered (0 while API_MAX_INFLIGHT is off).
	HTTPInFlight prometheus.Gauge
}

// Label values of OutboxPublished, PaymentsBackstop and IdemLeaseEndRetries.
const (
	PathInline       = "inline"
	PathRelay        = "relay"
	PathSweep        = "sweep" // published again by the pending-payment sweeper
	BackstopReplayed = "replayed"
	BackstopMismatch = "mismatch"
	EndRecovered     = "recovered" // a retry got through
	EndLost          = "lost"      // another request had taken the key over (nothing written)
	EndGaveUp        = "gave_up"   // still unavailable when the retry time (IDEM_END_RETRY) ran out
)

// New creates the collectors and registers them on reg, plus an
// api_instance_info gauge (value 1) that names this instance. It panics if
// a collector is already registered, like prometheus.MustRegister.
func New(reg prometheus.Registerer, instance string) *Metrics {
	m := &Metrics{
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_requests_total", Help: "HTTP requests answered, by route pattern, method and status code.",
		}, []string{"route", "method", "status"}),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "http_request_duration_seconds", Help: "HTTP request latency by route pattern.",
			Buckets: []float64{.0005, .001, .0015, .002, .0025, .003, .004, .005, .0075, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route"}),
		IdemOutcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idem_boundary_outcomes_total",
			Help: "Idempotency boundary operations by stage, op (begin, complete, release) and outcome.",
		}, []string{"stage", "op", "outcome"}),
		IdemDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "idem_boundary_duration_seconds", Help: "Latency of idempotency boundary operations (one Redis script each).",
			Buckets: []float64{.0001, .00015, .0002, .00025, .0003, .0004, .0005, .00075, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"op"}),
		OutboxBacklog: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_backlog", Help: "Outbox rows not yet confirmed by the broker, as counted by the last relay pass.",
		}),
		OutboxPublishDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "outbox_publish_duration_seconds", Help: "Time from publishing an outbox message to the broker's confirm.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		OutboxPublished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "outbox_published_total", Help: "Outbox messages confirmed by the broker, by path (inline after commit, relay, or sweep of payments still pending).",
		}, []string{"path"}),
		OutboxMarkBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "outbox_mark_batch_rows",
			Help:    "Outbox rows marked published by one UPDATE after their broker confirms (confirms that arrive while one UPDATE runs share the next).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512},
		}),
		OutboxFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_publish_failures_total", Help: "Outbox publishes that failed, were nacked or timed out (the relay retries them).",
		}),
		PaymentsCreated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "payments_created_total", Help: "Payment rows inserted.",
		}),
		PaymentsBackstop: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payments_backstop_total",
			Help: "Requests answered by the Postgres unique-key backstop because Redis had forgotten the key, by result.",
		}, []string{"result"}),
		IdemLeaseEndRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idem_lease_end_retries_total",
			Help: "Complete or Release calls that Redis did not answer at first, retried before the answer was sent, by op and how the retry ended.",
		}, []string{"op", "result"}),
		PostgresUnavailable: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "postgres_unavailable_total",
			Help: "Requests answered 503 because Postgres could not be reached or did not answer in time (the key is released; the client retries).",
		}),
		HTTPShed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "http_requests_shed_total",
			Help: "Requests refused at once with 503 because API_MAX_INFLIGHT requests were already in flight on the payment routes (nothing done, the key not consumed).",
		}),
		HTTPInFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "http_requests_in_flight",
			Help: "Requests admitted on the payment routes and not yet answered (bounded by API_MAX_INFLIGHT; 0 when it is off).",
		}),
	}
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "api_instance_info", Help: "Always 1; the api_instance label names this process (API_INSTANCE).",
		ConstLabels: prometheus.Labels{"api_instance": instance},
	})
	info.Set(1)
	reg.MustRegister(m.HTTPRequests, m.HTTPDuration, m.IdemOutcomes, m.IdemDuration, m.OutboxBacklog,
		m.OutboxPublishDuration, m.OutboxPublished, m.OutboxFailures, m.OutboxMarkBatch, m.PaymentsCreated, m.PaymentsBackstop, m.IdemLeaseEndRetries,
		m.PostgresUnavailable, m.HTTPShed, m.HTTPInFlight, info)

	// Known label values start at zero, so rates and alerts work from the start.
	for _, o := range []string{idem.OutcomeAcquired, idem.OutcomeTakeover, idem.OutcomeReplayed,
		idem.OutcomeInProgress, idem.OutcomeMismatch, idem.OutcomeUnavailable, idem.OutcomeFull, idem.OutcomeShed} {
		m.IdemOutcomes.WithLabelValues("api", string(idem.OpBegin), o)
	}
	for _, op := range []idem.Op{idem.OpComplete, idem.OpRelease} {
		for _, o := range []string{idem.OutcomeOK, idem.OutcomeLost, idem.OutcomeUnavailable, idem.OutcomeFull, idem.OutcomeShed} {
			m.IdemOutcomes.WithLabelValues("api", string(op), o)
		}
	}
	m.OutboxPublished.WithLabelValues(PathInline)
	m.OutboxPublished.WithLabelValues(PathRelay)
	m.OutboxPublished.WithLabelValues(PathSweep)
	m.PaymentsBackstop.WithLabelValues(BackstopReplayed)
	m.PaymentsBackstop.WithLabelValues(BackstopMismatch)
	for _, op := range []idem.Op{idem.OpComplete, idem.OpRelease} {
		for _, r := range []string{EndRecovered, EndLost, EndGaveUp} {
			m.IdemLeaseEndRetries.WithLabelValues(string(op), r)
		}
	}
	return m
}

// ObserveIdem records one boundary event; use it as idem.Config.Observe.
func (m *Metrics) ObserveIdem(e idem.Event) {
	m.IdemOutcomes.WithLabelValues(e.Stage, string(e.Op), e.Outcome).Inc()
	m.IdemDuration.WithLabelValues(string(e.Op)).Observe(e.Duration.Seconds())
}
