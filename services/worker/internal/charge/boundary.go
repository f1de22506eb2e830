package charge

import (
	"context"

	"github.com/oncepay/oncepay/pkg/idem"
)

// Boundary is the idempotency boundary as the handler uses it. The real
// one is *idem.Store, through IdemBoundary; the comparison strategies of
// package naive (IDEM_STRATEGY) are adapted in the worker's wiring.
type Boundary interface {
	Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (Claim, error)
}

// Claim is what Begin found, as the handler uses it (idem.Claim):
// Outcome idem.Completed with the stored Result, or idem.Acquired with a
// Lease.
type Claim struct {
	Outcome  idem.Outcome
	Attempt  int
	TakeOver bool
	Lease    Lease
	Result   []byte
}

// Lease is the handler's ownership of the charge stage (*idem.Lease).
type Lease interface {
	Keep(ctx context.Context) (work context.Context, stop func())
	Complete(ctx context.Context, result []byte) error
	Release(ctx context.Context) error
}

// IdemBoundary returns s, oncepay's boundary, as a Boundary.
func IdemBoundary(s *idem.Store) Boundary { return idemBoundary{s} }

type idemBoundary struct{ s *idem.Store }

func (b idemBoundary) Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (Claim, error) {
	c, err := b.s.Begin(ctx, k, stage, fingerprint)
	out := Claim{Outcome: c.Outcome, Attempt: c.Attempt, TakeOver: c.TakeOver, Result: c.Result}
	if c.Lease != nil { // keep a nil *idem.Lease out of the interface
		out.Lease = c.Lease
	}
	return out, err
}
