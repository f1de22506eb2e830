//go:build compare

package conform_test

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/oncepay/oncepay/loadtest/conform"
)

// The comparison strategies of make compare (the api's teaching build),
// with Redis flushed during the storm: each fails the rows its pattern
// breaks: the Redis patterns replay the first answer to another payload;
// no-backstop answers a key Redis forgot with a second payment. off passes:
// oncepay's Postgres backstop still answers for every key, and what off
// breaks (a second psp charge in the worker) is beyond what the api's
// answers show (docs/conform.md, what it cannot see).
func TestConformCompareStrategies(t *testing.T) {
	tests := []struct {
		strategy string
		want     []string
	}{
		{"get-then-set", []string{"history", "other-payload"}},
		{"setnx-marker", []string{"history", "other-payload"}},
		{"lock-then-check", []string{"history", "other-payload"}},
		{"no-backstop", []string{"history"}},
		{"off", nil},
	}
	for _, tt := range tests {
		t.Run(tt.strategy, func(t *testing.T) {
			a := startOncepay(t, "compare", map[string]string{"IDEM_STRATEGY": tt.strategy})
			rep, err := conform.Check(t.Context(), a.flushDuringStorm(a.target()))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, row := range rep.Rows {
				if row.Result == conform.Fail {
					got = append(got, row.ID)
				}
			}
			sort.Strings(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				for _, row := range rep.Rows {
					t.Logf("%s %s: %s", row.ID, row.Result, row.Detail)
				}
				t.Errorf("failing rows (-want +got):\n%s", diff)
			}
		})
	}
}
