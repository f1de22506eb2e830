package verify

import (
	"strings"
	"testing"

	"github.com/oncepay/oncepay/loadtest/fault"
)

// TestDescribeCost: a fault's line gives what its cost measured, the
// Postgres ones their promotion and demotion too.
func TestDescribeCost(t *testing.T) {
	for _, tc := range []struct {
		name string
		cost fault.Cost
		want string
	}{
		{"redis failover", fault.Cost{Node: "redis-1", RefusedMS: 7400}, "; hit redis-1, writes refused 7.4s"},
		{"postgres failover", fault.Cost{Node: "pg-1", RefusedMS: 10605, PromotedMS: 10438, Detail: "new primary pg-3"},
			"; hit pg-1, writes refused 10.6s, new primary in 10.4s, new primary pg-3"},
		{"postgres partition", fault.Cost{Node: "pg-2", RefusedMS: 14000, PromotedMS: 13100, DemotedMS: 9800},
			"; hit pg-2, writes refused 14.0s, new primary in 13.1s, old leader demoted in 9.8s"},
		{"nothing promoted", fault.Cost{Node: "pg-2", RefusedMS: -1, PromotedMS: -1, DemotedMS: -1},
			"; hit pg-2, NO new primary, old leader NOT demoted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := describe(fault.Event{Action: fault.ActionFailover, Target: "postgres", Cost: &tc.cost})
			if _, tail, _ := strings.Cut(got, ";"); ";"+tail != tc.want {
				t.Errorf("describe = %q\nwant its cost part %q", got, tc.want)
			}
		})
	}
}
