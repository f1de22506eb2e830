package naive_test

import (
	"context"
	"errors"
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
