package metrics

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/prometheus/client_golang/prometheus"
)

func TestMetricsRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Settled(Charged)
	m.Skipped(SkipStale)
	m.Processed(time.Millisecond)
	m.PSPCall("succeeded", time.Millisecond)
	m.TakeOver()
	m.Redelivered()
	m.Boundary(idem.Event{Op: idem.OpBegin, Stage: "charge", Outcome: idem.OutcomeAcquired})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	slices.Sort(names)
	want := []string{
		"idem_boundary_outcomes_total", "idem_lease_end_retries_total", "worker_lease_takeovers_total", "worker_messages_total",
		"worker_processing_duration_seconds", "worker_psp_call_duration_seconds", "worker_redeliveries_total",
		"worker_settle_skipped_total",
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("metric names (-want +got):\n%s", diff)
	}
	if _, err := New(reg); err == nil {
		t.Error("registering twice did not fail")
	}
}
