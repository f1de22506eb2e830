package naive_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/naive"
)

// TestRealBoundaryIsIdem: a Boundary of Real answers with idem's claim,
// attempt and owner-checked lease; Unaliased claims an aliased key under
// the client's key.
func TestRealBoundaryIsIdem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := newRedis(t)
	store := idem.New(rdb, idem.Config{Lease: 10 * time.Second})
	k := newKey(t, "")

	c, err := naive.Real(store).Begin(ctx, k, "charge", "fp")
	if err != nil || c.Outcome != idem.Acquired || c.Attempt != 1 || c.Lease == nil {
		t.Fatalf("Begin = %+v, %v; want acquired, attempt 1, a lease", c, err)
	}
	alias, err := idem.NewKey(k.Merchant(), naive.NoBackstopAlias(k.ID(), "pay_0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := naive.Unaliased(store).Begin(ctx, alias, "charge", "fp"); !errors.Is(err, idem.ErrInProgress) {
		t.Errorf("Unaliased Begin of %s = %v, want in progress: the client's key is held", alias, err)
	}
	if err := c.Lease.CompleteAs(ctx, "other", []byte("r")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Begin(ctx, k, "charge", "fp"); !errors.Is(err, idem.ErrMismatch) {
		t.Errorf("Begin after CompleteAs(other) = %v, want idem.ErrMismatch: the lease is idem's", err)
	}
	if c, err := naive.Real(store).Begin(ctx, k, "charge", "other"); err != nil || c.Outcome != idem.Completed || string(c.Result) != "r" {
		t.Errorf("Begin with the stored fingerprint = %+v, %v; want the result replayed", c, err)
	}
}

// TestPSPKey: the real boundary propagates the key, Unaliased the client's
// key of an alias, a fresh-key strategy a new key per call.
func TestPSPKey(t *testing.T) {
	t.Parallel()
	store := idem.New(nil, idem.Config{})
	if got := naive.Real(store).PSPKey("m:k"); got != "m:k" {
		t.Errorf("Real: %q, want m:k", got)
	}
	if got := naive.Unaliased(store).PSPKey("m:" + naive.NoBackstopAlias("k", "pay_0123456789")); got != "m:k" {
		t.Errorf("Unaliased: %q, want m:k", got)
	}
	if got := naive.Of(naive.NewTrusting(idem.Config{}), false).PSPKey("m:k"); got != "m:k" {
		t.Errorf("Of(_, false): %q, want m:k", got)
	}
	fresh := naive.Of(naive.NewTrusting(idem.Config{}), true)
	a, b := fresh.PSPKey("m:k"), fresh.PSPKey("m:k")
	if a == b || !strings.HasPrefix(a, "m:k:attempt-") {
		t.Errorf("Of(_, true): %q then %q, want a new m:k:attempt-<random> each time", a, b)
	}
}
