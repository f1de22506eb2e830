package idemstage_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemstage"
)

// redisDB is this package's Redis database.
const redisDB = 11

func newKey(t *testing.T) idem.Key {
	t.Helper()
	k, err := idem.NewKey(redistest.Name(t, "m"), redistest.Name(t, "k"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// deliver calls Do like a consumer handling redeliveries: on
// ErrInProgress it waits (at most 20ms) and delivers again.
func deliver(ctx context.Context, s *idemstage.Stage, k idem.Key, work idemstage.Work) (idemstage.Done, error) {
	for {
		d, err := s.Do(ctx, k, "fp", work)
		if ip, ok := errors.AsType[*idem.InProgressError](err); ok {
			time.Sleep(min(ip.RetryAfter, 20*time.Millisecond))
			continue
		}
		return d, err
	}
}

// TestOneSideEffectUnderRedelivery: 32 consumers get the same message,
// each redelivering until it is settled; the side effect runs once and
// every consumer ends with its result.
func TestOneSideEffectUnderRedelivery(t *testing.T) {
	t.Parallel()
	store := idem.New(redistest.Client(t, redisDB), idem.Config{Lease: 5 * time.Second})
	s := idemstage.New(store, idemstage.Config{Stage: "ship"})
	k := newKey(t)
	var effects atomic.Int64
	var providerKeys sync.Map
	work := func(ctx context.Context, a idemstage.Attempt) ([]byte, error) {
		n := effects.Add(1)
		providerKeys.Store(a.Key.Merchant()+":"+a.Key.ID(), true)
		time.Sleep(30 * time.Millisecond) // the provider's call
		return fmt.Appendf(nil, "shipment %d", n), nil
	}
	const consumers = 32
	var wg sync.WaitGroup
	dones := make([]idemstage.Done, consumers)
	errs := make([]error, consumers)
	for i := range consumers {
		wg.Go(func() { dones[i], errs[i] = deliver(context.Background(), s, k, work) })
	}
	wg.Wait()
	if got := effects.Load(); got != 1 {
		t.Fatalf("side effect ran %d times, want 1", got)
	}
	fresh := 0
	for i := range consumers {
		if errs[i] != nil {
			t.Errorf("consumer %d: %v", i, errs[i])
		}
		if got, want := string(dones[i].Result), "shipment 1"; got != want {
			t.Errorf("consumer %d result %q, want %q", i, got, want)
		}
		if !dones[i].Replayed {
			fresh++
		}
	}
	if fresh != 1 {
		t.Errorf("%d consumers ran the work, want 1", fresh)
	}
	if _, ok := providerKeys.Load(k.Merchant() + ":" + k.ID()); !ok {
		t.Error("the work was not given the message's key")
	}
}

// TestFailureReleases: a failed work releases the stage with its error,
// the redelivery runs it again at once and completes it, and the next
// redelivery is a replay.
func TestFailureReleases(t *testing.T) {
	t.Parallel()
	store := idem.New(redistest.Client(t, redisDB), idem.Config{Lease: 5 * time.Second})
	s := idemstage.New(store, idemstage.Config{Stage: "ship"})
	k := newKey(t)
	errDown := errors.New("provider down")
	var runs []int
	work := func(_ context.Context, a idemstage.Attempt) ([]byte, error) {
		runs = append(runs, a.Number)
		if len(runs) == 1 {
			return nil, errDown
		}
		return []byte("ok"), nil
	}
	ctx := context.Background()
	tests := []struct {
		name     string
		wantErr  error
		want     string
		replayed bool
	}{
		{"failure", errDown, "", false},
		{"redelivery runs again", nil, "ok", false},
		{"redelivery after completion", nil, "ok", true},
	}
	for _, tt := range tests {
		d, err := s.Do(ctx, k, "fp", work)
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Fatalf("%s: err %v, want %v", tt.name, err, tt.wantErr)
		}
		if string(d.Result) != tt.want || d.Replayed != tt.replayed {
			t.Errorf("%s: got %q replayed %v, want %q replayed %v", tt.name, d.Result, d.Replayed, tt.want, tt.replayed)
		}
	}
	if got, want := fmt.Sprint(runs), "[1 2]"; got != want {
		t.Errorf("work ran with attempts %s, want %s", got, want)
	}
	if _, err := s.Do(ctx, k, "other", work); !errors.Is(err, idem.ErrMismatch) {
		t.Errorf("another message with the key: %v, want ErrMismatch", err)
	}
}

// TestMaxHoldReleases: work that outlasts MaxHold is cut off with
// ErrHoldExceeded while the lease is still ours, and the stage is released.
func TestMaxHoldReleases(t *testing.T) {
	t.Parallel()
	store := idem.New(redistest.Client(t, redisDB), idem.Config{Lease: 5 * time.Second})
	s := idemstage.New(store, idemstage.Config{Stage: "ship", MaxHold: 100 * time.Millisecond})
	k := newKey(t)
	_, err := s.Do(context.Background(), k, "fp", func(ctx context.Context, _ idemstage.Attempt) ([]byte, error) {
		<-ctx.Done()
		return nil, context.Cause(ctx)
	})
	if !errors.Is(err, idemstage.ErrHoldExceeded) {
		t.Fatalf("Do: %v, want ErrHoldExceeded", err)
	}
	c, err := store.Begin(context.Background(), k, "ship", "fp")
	if err != nil || c.Outcome != idem.Acquired || c.TakeOver {
		t.Errorf("Begin after the hold: %+v %v; want acquired at once, no takeover (released)", c, err)
	}
}

// TestPanicReleases: a panic in the work releases the stage and goes on.
func TestPanicReleases(t *testing.T) {
	t.Parallel()
	store := idem.New(redistest.Client(t, redisDB), idem.Config{Lease: 5 * time.Second})
	s := idemstage.New(store, idemstage.Config{Stage: "ship"})
	k := newKey(t)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not go on")
			}
		}()
		_, _ = s.Do(context.Background(), k, "fp", func(context.Context, idemstage.Attempt) ([]byte, error) { panic("boom") })
	}()
	c, err := store.Begin(context.Background(), k, "ship", "fp")
	if err != nil || c.Outcome != idem.Acquired || c.TakeOver {
		t.Errorf("Begin after the panic: %+v %v; want acquired at once (released)", c, err)
	}
}
