package main

import (
	"testing"

	"github.com/oncepay/oncepay/loadtest/bench/results"
)

func TestHalfway(t *testing.T) {
	for _, tt := range []struct {
		name          string
		ceiling, knee float64
		want          float64
		ok            bool
	}{
		{"kept up at 750, fell behind at 1000", 750, 1000, 875, true},
		{"came down: fell behind at 750, kept up at 500", 500, 750, 625, true},
		{"already halved: 875 and 1000", 875, 1000, 0, false},
		{"never fell behind", 1000, 0, 0, false},
		{"never kept up", 0, 250, 0, false},
	} {
		got, ok := halfway(results.ColocRun{Ceiling: tt.ceiling, Knee: tt.knee})
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: halfway = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}
