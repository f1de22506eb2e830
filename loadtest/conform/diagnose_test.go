package conform

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/google/go-cmp/cmp"
)

func TestDiagnose(t *testing.T) {
	tests := []struct {
		name string
		ops  []porcupine.Operation
		want map[string]int
	}{
		{"legal: nothing to say", []porcupine.Operation{op("k", "a", 0, 10, ok1), op("k", "b", 20, 30, mismatch)}, nil},
		{"keyed on the header alone", []porcupine.Operation{op("k", "a", 0, 10, ok1), op("k", "b", 20, 30, ok1)}, map[string]int{whyOtherSameAnswer: 1}},
		{"another payload ran too", []porcupine.Operation{op("k", "a", 0, 10, ok1), op("k", "b", 20, 30, ok2)}, map[string]int{whyOtherAccepted: 1}},
		{"a duplicate ran again", []porcupine.Operation{op("k", "a", 0, 10, ok1), op("k", "a", 2, 12, ok2), op("j", "a", 0, 10, ok1), op("j", "a", 2, 12, ok2)}, map[string]int{whyReplayDiffers: 2}},
		{"422 alone", []porcupine.Operation{op("k", "a", 0, 10, mismatch)}, map[string]int{whyMismatchAlone: 1}},
		{"two effects", []porcupine.Operation{op("k", "a", 0, 10, ok1), final("k", 100, 2)}, map[string]int{whyEffectsDiffer: 1}},
		{"an answer without an effect", []porcupine.Operation{op("k", "a", 0, 10, ok1), final("k", 100, 0)}, map[string]int{whyEffectsDiffer: 1}},
		{"poisoned key", []porcupine.Operation{op("k", "a", 0, 10, ok1), op("k", "b", 20, 30, mismatch), op("k", "a", 40, 50, mismatch)}, map[string]int{whyUnknown: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := checkHistory(tt.ops, 10*time.Second)
			if diff := cmp.Diff(tt.want, v.Diagnosis); diff != "" {
				t.Errorf("diagnosis (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHistoryDetailIsStable: the failing history row's detail names the
// reasons and counts, never a (random) key, so a report of the same
// behaviour reads the same (docs/conform.md's third-party table relies on it).
func TestHistoryDetailIsStable(t *testing.T) {
	ops := []porcupine.Operation{
		op("conform-s0-1f2e3d4c5b6a7988", "a", 0, 10, ok1), op("conform-s0-1f2e3d4c5b6a7988", "b", 20, 30, ok1),
		op("conform-s1-0a1b2c3d4e5f6071", "a", 0, 10, ok1),
	}
	r := &StormReport{Verdict: checkHistory(ops, 10*time.Second)}
	row := gradeHistory(Row{ID: "history"}, r, false)
	want := "Illegal: 1 of 2 keys have no legal order: another payload got the same 2xx answer (1 key)"
	if row.Result != Fail || row.Detail != want {
		t.Errorf("got %s %q, want fail %q", row.Result, row.Detail, want)
	}
	if strings.Contains(row.Detail, "conform-s") {
		t.Errorf("detail names a key: %q", row.Detail)
	}
}
