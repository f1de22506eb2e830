package verify_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/verify"
)

// TestAddK6: a crossed k6 threshold fails the run, named; so does any other
// non-zero exit of k6. A run whose thresholds all held still passes.
func TestAddK6(t *testing.T) {
	t.Parallel()
	held := map[string]bool{"checks: rate==1": true, "replay_identical: rate==1": true}
	crossed := map[string]bool{"checks: rate==1": false, "replay_identical: rate==1": false, "payment_completed: rate>0.99": true}
	tests := []struct {
		name string
		k6   verify.K6
		want []verify.Violation // Detail is not compared
		text string
	}{
		{"thresholds held", verify.K6{Thresholds: held}, nil, "k6         exit 0, 2 thresholds held"},
		{"thresholds crossed", verify.K6{Exit: 99, Thresholds: crossed},
			[]verify.Violation{{Kind: verify.KindK6Threshold, IDs: []string{"checks: rate==1", "replay_identical: rate==1"}}},
			"k6         exit 99, thresholds FAILED: checks: rate==1; replay_identical: rate==1"},
		{"exit 99 without a summary", verify.K6{Exit: 99}, []verify.Violation{{Kind: verify.KindK6Threshold}}, "k6         exit 99"},
		{"a crossed threshold whose exit status was lost", verify.K6{Thresholds: crossed},
			[]verify.Violation{{Kind: verify.KindK6Threshold, IDs: []string{"checks: rate==1", "replay_identical: rate==1"}}}, "thresholds FAILED"},
		{"k6 failed", verify.K6{Exit: 107}, []verify.Violation{{Kind: verify.KindK6Failed}}, "k6         exit 107"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := verify.Check(clean())
			r.AddK6(tt.k6)
			var text bytes.Buffer
			if err := r.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			for i := range r.Violations {
				if r.Violations[i].Detail == "" {
					t.Errorf("violation %+v has no detail", r.Violations[i])
				}
				r.Violations[i].Detail = ""
			}
			if diff := cmp.Diff(tt.want, r.Violations); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
			if r.Pass != (len(tt.want) == 0) {
				t.Errorf("Pass = %v with %d violations", r.Pass, len(tt.want))
			}
			if !strings.Contains(text.String(), tt.text) {
				t.Errorf("report text lacks %q:\n%s", tt.text, text.String())
			}
		})
	}
}

func TestReadK6Summary(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "summary.json")
	if err := os.WriteFile(path, []byte(`{"http_reqs":3,"thresholds":{"checks: rate==1":false,"replay_identical: rate==1":true}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := verify.ReadK6Summary(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]bool{"checks: rate==1": false, "replay_identical: rate==1": true}, got); diff != "" {
		t.Errorf("thresholds (-want +got):\n%s", diff)
	}
	if _, err := verify.ReadK6Summary(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Error("ReadK6Summary of a missing file: no error")
	}
}
