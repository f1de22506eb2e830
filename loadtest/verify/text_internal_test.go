package verify

import (
	"bytes"
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

// TestMatrixColumns: every row of the fault matrix's table starts its
// columns where the header does, a kind longer than 20 characters
// (failover-postgres-lagged) too.
func TestMatrixColumns(t *testing.T) {
	rows := []FaultRow{
		{Seq: 1, Kind: "kill-api", Target: "api-1", Landed: true, Hit: "api-1", InFlight: 1, Frozen: true, Exercises: []int{1, 6}},
		{Seq: 2, Kind: "failover-postgres-lagged", Target: "postgres", Landed: true, Hit: "worker-2", InFlight: 1, Unavailable: 1121, Exercises: []int{1, 7, 8}},
		{Seq: 3, Kind: "latency-api-postgres", Target: "api-1.postgres-with-a-long-name", Landed: false},
	}
	var b bytes.Buffer
	p := &printer{w: &b}
	writeMatrix(p, rows)
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want a header and 3 rows:\n%s", len(lines), b.String())
	}
	header := lines[0]
	for _, col := range []string{"target", "at", "hit", "inflight", "503s", "recovered in"} {
		want := strings.Index(header, " "+col+" ")
		if col == "recovered in" {
			want = strings.Index(header, " "+col)
		}
		for i, line := range lines[1:] {
			if want < 0 || want >= len(line) || line[want] != ' ' || line[want+1] == ' ' {
				t.Errorf("row %d: column %q (offset %d of the header) does not start a cell:\n%s\n%s", i+1, col, want+1, header, line)
			}
		}
	}
	if !strings.Contains(lines[2], "failover-postgres-lagged postgres") {
		t.Errorf("the long kind runs into its target: %q", lines[2])
	}
}
