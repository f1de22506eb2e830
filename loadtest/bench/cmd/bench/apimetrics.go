package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/results"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The api histograms a latency round reads, keyed as apiHists returns them.
const (
	histBegin    = "begin"    // idem_boundary_duration_seconds{op="begin"}
	histComplete = "complete" // idem_boundary_duration_seconds{op="complete"}
	histPayments = "payments" // http_request_duration_seconds{route="/v1/payments"}
)

// apiHists reads v's api replicas' /metrics (on the ops listener, port+20)
// and returns the histograms of the keys above, summed over the replicas.
func (b *bench) apiHists(ctx context.Context, v *variant) (map[string]results.Hist, error) {
	out := map[string]results.Hist{}
	for _, port := range v.APIs {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr(port+20)+"/metrics", nil)
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			return nil, err
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("api metrics on %d: %w", port+20, err)
		}
		for k, h := range pickHists(fams) {
			out[k] = out[k].Add(h)
		}
	}
	return out, nil
}

// pickHists picks the histograms of apiHists out of one scrape.
func pickHists(fams map[string]*dto.MetricFamily) map[string]results.Hist {
	out := map[string]results.Hist{}
	for fam, label := range map[string]string{"idem_boundary_duration_seconds": "op", "http_request_duration_seconds": "route"} {
		f := fams[fam]
		if f == nil {
			continue
		}
		for _, m := range f.GetMetric() {
			var key string
			for _, l := range m.GetLabel() {
				if l.GetName() != label {
					continue
				}
				switch v := l.GetValue(); {
				case label == "op" && (v == histBegin || v == histComplete):
					key = v
				case label == "route" && v == "/v1/payments":
					key = histPayments
				}
			}
			if key == "" || m.GetHistogram() == nil {
				continue
			}
			h := m.GetHistogram()
			r := results.Hist{Sum: h.GetSampleSum(), Count: float64(h.GetSampleCount())}
			for _, bk := range h.GetBucket() {
				if math.IsInf(bk.GetUpperBound(), 1) { // Count has it
					continue
				}
				r.Bounds = append(r.Bounds, bk.GetUpperBound())
				r.Cum = append(r.Cum, float64(bk.GetCumulativeCount()))
			}
			out[key] = r
		}
	}
	return out
}
