package httpapi_test

import (
	"math/rand/v2"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oncepay/oncepay/services/psp/internal/psptest"
)

// TestRandomMethodsKeepMetricsBounded: requests with made-up methods and
// paths add no metric series beyond the fixed label values.
func TestRandomMethodsKeepMetricsBounded(t *testing.T) {
	t.Parallel()
	s := psptest.Start(t, psptest.Knobs())
	rng := rand.New(rand.NewPCG(1, 2))
	sendRandom := func(n int) {
		for range n {
			method := make([]byte, 3+rng.IntN(10))
			for i := range method {
				method[i] = byte('A' + rng.IntN(26))
			}
			path := "/" + string(method[:1+rng.IntN(len(method))])
			if a := send(t, string(method), s.URL+path, nil, ""); a.Status >= 500 {
				t.Fatalf("%s %s = %d", method, path, a.Status)
			}
		}
	}
	sendRandom(50)
	before := seriesCount(t, s.Registry)
	sendRandom(1000)
	if after := seriesCount(t, s.Registry); after-before > 5 {
		t.Errorf("1000 requests with random methods added %d series (%d -> %d), want at most 5", after-before, before, after)
	}
}

func seriesCount(t *testing.T, g prometheus.Gatherer) int {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		n += len(mf.GetMetric())
	}
	return n
}
