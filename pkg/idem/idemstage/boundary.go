package idemstage

import (
	"context"

	"github.com/oncepay/oncepay/pkg/idem"
)

// Boundary claims a stage of a key: *idem.Store (New), or another
// implementation of idem.Store.Begin's contract (NewOn), such as a
// comparison strategy in a teaching build.
type Boundary interface {
	Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (Claim, error)
}

// Claim is what Begin found (idem.Claim): Outcome idem.Acquired with a
// Lease, or idem.Completed with the stored Result.
type Claim struct {
	Outcome idem.Outcome
	// Attempt counts the claims of the stage, from 1; TakeOver: this claim
	// took over an expired lease. Zero for a boundary that counts none.
	Attempt  int
	TakeOver bool
	Lease    Lease
	Result   []byte
}

// Lease is the ownership of an acquired stage (*idem.Lease).
type Lease interface {
	// Keep keeps the lease alive while the work runs; work ends, with
	// cause idem.ErrLost, before the lease can be taken over. stop ends
	// the keeping.
	Keep(ctx context.Context) (work context.Context, stop func())
	Complete(ctx context.Context, result []byte) error
	Release(ctx context.Context) error
}

// store is *idem.Store as a Boundary.
type store struct{ s *idem.Store }

func (b store) Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (Claim, error) {
	c, err := b.s.Begin(ctx, k, stage, fingerprint)
	if err != nil {
		return Claim{}, err
	}
	claim := Claim{Outcome: c.Outcome, Attempt: c.Attempt, TakeOver: c.TakeOver, Result: c.Result}
	if c.Lease != nil {
		claim.Lease = c.Lease
	}
	return claim, nil
}
