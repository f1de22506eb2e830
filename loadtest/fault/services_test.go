package fault_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/fault"
)

// TestPSPOutageSendsTheAdminToken: every admin call of an outage carries
// the token; the knobs go to fail_before_rate 1 and back to what they were.
func TestPSPOutageSendsTheAdminToken(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	knobs := map[string]any{"fail_before_rate": 0.0, "idempotency": true}
	var puts []map[string]any
	psp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret-admin-token" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodPut {
			var patch map[string]any
			if err := json.NewDecoder(r.Body).Decode(&patch); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			puts = append(puts, patch)
			for k, v := range patch {
				knobs[k] = v
			}
		}
		_ = json.NewEncoder(w).Encode(knobs)
	}))
	t.Cleanup(psp.Close)

	if err := (&fault.PSPAdmin{URL: psp.URL, Token: "wrong"}).Outage(t.Context(), time.Millisecond); err == nil {
		t.Error("outage with a wrong token: no error")
	}
	if err := (&fault.PSPAdmin{URL: psp.URL, Token: "s3cret-admin-token"}).Outage(t.Context(), 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"fail_before_rate": 1.0}, {"fail_before_rate": 0.0}}
	if diff := cmp.Diff(want, puts); diff != "" {
		t.Errorf("PUT /admin/config bodies (-want +got):\n%s", diff)
	}
}

// TestPSPRejectSetsTheKnobAndPutsItBack: a reject fault sets RejectKnob to
// its share for its duration, then the value it found, and only that: the
// psp refuses a PUT of its read-only reject_until, as the fake does.
func TestPSPRejectSetsTheKnobAndPutsItBack(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	knobs := map[string]any{fault.RejectKnob: 0.0, "idempotency": true, "reject_until": nil}
	var puts []map[string]any
	psp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodPut {
			var patch map[string]any
			if err := json.NewDecoder(r.Body).Decode(&patch); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if _, ok := patch["reject_until"]; ok {
				http.Error(w, `{"errors":[{"field":"reject_until","detail":"is not a known field"}]}`, http.StatusBadRequest)
				return
			}
			puts = append(puts, patch)
			for k, v := range patch {
				knobs[k] = v
			}
		}
		_ = json.NewEncoder(w).Encode(knobs)
	}))
	t.Cleanup(psp.Close)
	if err := (&fault.PSPAdmin{URL: psp.URL, Token: "t"}).Reject(t.Context(), 0.3, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{fault.RejectKnob: 0.3, "reject_for_ms": 10.0}, {fault.RejectKnob: 0.0}}
	if diff := cmp.Diff(want, puts); diff != "" {
		t.Errorf("PUT /admin/config bodies (-want +got):\n%s", diff)
	}
}
