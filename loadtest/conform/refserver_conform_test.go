package conform_test

import (
	"context"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/oncepay/oncepay/loadtest/conform"
)

// Each flaw of the reference server fails exactly the rows that see it;
// mayFail rows see it only when the storm's timing lets them.
func TestReferenceServerFlaws(t *testing.T) {
	tests := []struct {
		flaw    flaw
		want    []string
		mayFail []string
		na      []string // rows the flaw makes n/a
	}{
		{flaw: noFlaw},
		{flaw: noKeyRequired, want: []string{"key-required"}},
		{flaw: noKeyValidation, want: []string{"key-empty", "key-not-ascii", "key-too-long"}},
		{flaw: repeatedKey, want: []string{"key-repeated"}},
		{flaw: noQuoted, want: []string{"key-quoted"}},
		{flaw: no422, want: []string{"history", "other-payload"}},
		{flaw: poisons, want: []string{"no-poison"}, mayFail: []string{"history"}},
		{flaw: caches5xx, want: []string{"5xx-not-cached"}},
		{flaw: noScope, want: []string{"scope"}},
		{flaw: replayNewBytes, want: []string{"concurrent", "history", "key-quoted", "no-poison", "replay"}},
		{flaw: replayDropsHeader, want: []string{"replay-headers"}},
		{flaw: noMarker, want: []string{"replay-marker"}},
		{flaw: noRetryAfter, want: []string{"retry-after"}},
		{flaw: race, want: []string{"concurrent", "history"}, na: []string{"retry-after"}},
		{flaw: plainErrors, want: []string{"problem-json"}},
		{flaw: getUsesKey, want: []string{"get-ignored"}},
	}
	for _, tt := range tests {
		name := string(tt.flaw)
		if name == "" {
			name = "correct"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, srv := newRefServer(t, tt.flaw)
			rep, err := conform.Check(context.Background(), s.target(srv))
			if err != nil {
				t.Fatal(err)
			}
			isNA := map[string]bool{}
			for _, id := range tt.na {
				isNA[id] = true
			}
			may := map[string]bool{}
			for _, id := range tt.mayFail {
				may[id] = true
			}
			var got []string
			for _, row := range rep.Rows {
				if row.Result == conform.Fail && !may[row.ID] {
					got = append(got, row.ID)
				}
				if (row.Result == conform.NA) != isNA[row.ID] {
					t.Errorf("row %s is %s, want n/a %v: %s", row.ID, row.Result, isNA[row.ID], row.Detail)
				}
			}
			sort.Strings(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				for _, row := range rep.Rows {
					t.Logf("%s %s: %s", row.ID, row.Result, row.Detail)
				}
				t.Errorf("failing rows (-want +got):\n%s", diff)
			}
			wantOK := true
			for _, row := range rep.Rows {
				if row.Failed() {
					wantOK = false
				}
			}
			if rep.OK != wantOK {
				t.Errorf("OK = %v, want %v", rep.OK, wantOK)
			}
		})
	}
}

// The replay-headers detail names the header, not its values (a new id
// each run), so a report of the same behaviour reads the same.
func TestReplayHeadersDetail(t *testing.T) {
	s, srv := newRefServer(t, replayDropsHeader)
	tgt := s.target(srv)
	tgt.Storm.Keys = -1
	rep, err := conform.Check(context.Background(), tgt)
	if err != nil {
		t.Fatal(err)
	}
	row, _ := rep.Row("replay-headers")
	if got, want := row.Detail, "the replay dropped Location"; row.Result != conform.Fail || got != want {
		t.Errorf("got %s %q, want fail %q", row.Result, got, want)
	}
}
