package faults

import (
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPatchValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		patch Patch
		want  []string
	}{
		{"empty", Patch{}, nil},
		{"all fine", Patch{LatencyMS: new(int64(0)), LatencyJitterMS: new(int64(MaxLatencyMS)), FailBeforeRate: new(0.0),
			ErrorRate: new(1.0), FailAfterRate: new(0.5), Idempotency: new(false), Seed: new(int64(-7))}, nil},
		{"every problem", Patch{LatencyMS: new(int64(-1)), LatencyJitterMS: new(int64(MaxLatencyMS + 1)), FailBeforeRate: new(-0.1),
			ErrorRate: new(1.5), FailAfterRate: new(2.0)},
			[]string{"error_rate", "fail_after_rate", "fail_before_rate", "latency_jitter_ms", "latency_ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := slices.Sorted(maps.Keys(tt.patch.Valid()))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	t.Parallel()
	inj, err := New(Defaults())
	if err != nil {
		t.Fatal(err)
	}
	got, err := inj.Update(Patch{ErrorRate: new(0.25), Idempotency: new(false)})
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	want.ErrorRate, want.Idempotency = 0.25, false
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Update (-want +got):\n%s", diff)
	}
	if _, err := inj.Update(Patch{ErrorRate: new(3.0), LatencyMS: new(int64(1))}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("invalid Update: err = %v, want ErrInvalid", err)
	}
	if diff := cmp.Diff(want, inj.Knobs()); diff != "" {
		t.Errorf("an invalid Update changed the knobs (-want +got):\n%s", diff)
	}
	if _, err := New(Knobs{FailAfterRate: -1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("New with bad knobs: err = %v, want ErrInvalid", err)
	}
}

func draws(inj *Injector, n int) []Plan {
	plans := make([]Plan, n)
	for i := range plans {
		plans[i] = inj.Draw()
	}
	return plans
}

func TestDrawIsDeterministicPerSeed(t *testing.T) {
	t.Parallel()
	k := Knobs{LatencyMS: 20, LatencyJitterMS: 10, FailBeforeRate: 0.3, ErrorRate: 0.3, FailAfterRate: 0.3, Idempotency: true, Seed: 42}
	a, _ := New(k)
	b, _ := New(k)
	first := draws(a, 200)
	if diff := cmp.Diff(first, draws(b, 200)); diff != "" {
		t.Fatalf("same seed, different plans (-a +b):\n%s", diff)
	}
	if _, err := a.Update(Patch{Seed: new(int64(42))}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, draws(a, 200)); diff != "" {
		t.Fatalf("reseeding did not restart the sequence (-first +again):\n%s", diff)
	}
	c, _ := New(Knobs{LatencyMS: 20, LatencyJitterMS: 10, FailBeforeRate: 0.3, ErrorRate: 0.3, FailAfterRate: 0.3, Seed: 43})
	if cmp.Equal(first, draws(c, 200)) {
		t.Error("seeds 42 and 43 drew the same 200 plans")
	}
	var before, fail, after int
	for _, p := range first {
		if p.Delay < 10*time.Millisecond || p.Delay > 30*time.Millisecond {
			t.Errorf("delay %v outside 20ms ± 10ms", p.Delay)
		}
		before, fail, after = before+b2i(p.FailBefore), fail+b2i(p.Error), after+b2i(p.FailAfter)
	}
	for name, n := range map[string]int{"fail_before": before, "error": fail, "fail_after": after} {
		if n < 30 || n > 90 { // 0.3 × 200 = 60; this bound is far outside chance for a fixed seed anyway
			t.Errorf("%s drawn %d times in 200 at rate 0.3", name, n)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestDrawExtremes(t *testing.T) {
	t.Parallel()
	never, _ := New(Knobs{Idempotency: true, Seed: 7})
	always, _ := New(Knobs{LatencyMS: 5, LatencyJitterMS: 50, FailBeforeRate: 1, ErrorRate: 1, FailAfterRate: 1, Seed: 7})
	for range 500 {
		if p := never.Draw(); p != (Plan{Idempotency: true}) {
			t.Fatalf("rates 0: plan %+v", p)
		}
		p := always.Draw()
		if !p.FailBefore || !p.Error || !p.FailAfter || p.Idempotency {
			t.Fatalf("rates 1: plan %+v", p)
		}
		if p.Delay < 0 || p.Delay > 55*time.Millisecond {
			t.Fatalf("delay %v outside [0, 55ms]", p.Delay)
		}
	}
}

func TestInjectorConcurrentUse(t *testing.T) {
	t.Parallel()
	inj, _ := New(Defaults())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				inj.Draw()
				if j%50 == 0 {
					_, _ = inj.Update(Patch{ErrorRate: new(float64(i) / 10), Seed: new(int64(j))})
				}
				_ = inj.Knobs()
			}
		})
	}
	wg.Wait()
}

func TestRejectWindow(t *testing.T) {
	t.Parallel()
	inj, err := New(Knobs{Idempotency: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	inj.now = func() time.Time { return now }

	k, err := inj.Update(Patch{RejectRate: new(0.5), RejectForMS: new(int64(10_000))})
	if err != nil {
		t.Fatal(err)
	}
	if want := now.Add(10 * time.Second); k.RejectRate != 0.5 || k.RejectUntil == nil || !k.RejectUntil.Equal(want) {
		t.Fatalf("knobs = %+v, want reject_rate 0.5 until %s", k, want)
	}
	var rejected int
	for range 400 {
		if inj.Draw().Reject {
			rejected++
		}
	}
	if rejected < 150 || rejected > 250 { // 0.5 × 400 = 200
		t.Errorf("rejected %d of 400 at rate 0.5", rejected)
	}

	now = now.Add(10 * time.Second) // the window ends
	for range 100 {
		if inj.Draw().Reject {
			t.Fatal("a call was rejected after the window ended")
		}
	}
	if k := inj.Knobs(); k.RejectRate != 0 || k.RejectUntil != nil {
		t.Errorf("knobs after the window = %+v, want reject_rate 0, no reject_until", k)
	}

	// Without reject_for_ms the rate holds until changed.
	if _, err := inj.Update(Patch{RejectRate: new(1.0)}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(24 * time.Hour)
	if p := inj.Draw(); !p.Reject {
		t.Errorf("rate 1 without a window: plan %+v, want Reject", p)
	}
}

func TestRejectPatchValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		patch Patch
		want  []string
	}{
		{"rate and window", Patch{RejectRate: new(0.3), RejectForMS: new(int64(MaxRejectForMS))}, nil},
		{"rate alone", Patch{RejectRate: new(1.0)}, nil},
		{"window alone", Patch{RejectForMS: new(int64(1000))}, []string{"reject_for_ms"}},
		{"out of range", Patch{RejectRate: new(1.1), RejectForMS: new(int64(-1))}, []string{"reject_for_ms", "reject_rate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := slices.Sorted(maps.Keys(tt.patch.Valid()))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
