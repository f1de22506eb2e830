package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/oncepay/oncepay/loadtest/bench/results"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func TestPickHists(t *testing.T) {
	t.Parallel()
	raw := `# TYPE idem_boundary_duration_seconds histogram
idem_boundary_duration_seconds_bucket{op="begin",le="0.0001"} 1
idem_boundary_duration_seconds_bucket{op="begin",le="0.0002"} 3
idem_boundary_duration_seconds_bucket{op="begin",le="+Inf"} 4
idem_boundary_duration_seconds_sum{op="begin"} 0.0009
idem_boundary_duration_seconds_count{op="begin"} 4
idem_boundary_duration_seconds_bucket{op="release",le="0.0001"} 0
idem_boundary_duration_seconds_bucket{op="release",le="0.0002"} 0
idem_boundary_duration_seconds_bucket{op="release",le="+Inf"} 0
idem_boundary_duration_seconds_sum{op="release"} 0
idem_boundary_duration_seconds_count{op="release"} 0
# TYPE http_request_duration_seconds histogram
http_request_duration_seconds_bucket{route="/v1/payments",le="0.001"} 2
http_request_duration_seconds_bucket{route="/v1/payments",le="+Inf"} 2
http_request_duration_seconds_sum{route="/v1/payments"} 0.0015
http_request_duration_seconds_count{route="/v1/payments"} 2
http_request_duration_seconds_bucket{route="/v1/payments/{id}",le="0.001"} 7
http_request_duration_seconds_bucket{route="/v1/payments/{id}",le="+Inf"} 7
http_request_duration_seconds_sum{route="/v1/payments/{id}"} 0.001
http_request_duration_seconds_count{route="/v1/payments/{id}"} 7
`
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]results.Hist{
		histBegin:    {Bounds: []float64{.0001, .0002}, Cum: []float64{1, 3}, Sum: .0009, Count: 4},
		histPayments: {Bounds: []float64{.001}, Cum: []float64{2}, Sum: .0015, Count: 2},
	}
	if diff := cmp.Diff(want, pickHists(fams)); diff != "" {
		t.Errorf("pickHists (-want +got):\n%s", diff)
	}
}
