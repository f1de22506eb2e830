package httpapi

import (
	"context"

	"github.com/oncepay/oncepay/pkg/idem"
)

// Boundary claims the api stage of an idempotent operation. The real one
// is *idem.Store, through IdemBoundary; the comparison strategies of
// package naive (IDEM_STRATEGY) are adapted in the api's wiring.
type Boundary interface {
	Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (Claim, error)
}

// Claim is what Begin found, as the api uses it (idem.Claim): Outcome
// idem.Completed with the stored Result, or idem.Acquired with a Lease.
type Claim struct {
	Outcome idem.Outcome
	Lease   Lease
	Result  []byte
}

// Lease ends the ownership of an acquired stage (*idem.Lease).
type Lease interface {
	Complete(ctx context.Context, result []byte) error
	Release(ctx context.Context) error
}

// repairer is a Lease that can complete its stage as another request
// (*idem.Lease): with that request's fingerprint and answer, the database's
// truth after Redis lost the key.
type repairer interface {
	CompleteAs(ctx context.Context, fingerprint string, result []byte) error
}

// IdemBoundary returns s, oncepay's boundary, as a Boundary.
func IdemBoundary(s *idem.Store) Boundary { return idemBoundary{s} }

type idemBoundary struct{ s *idem.Store }

func (b idemBoundary) Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (Claim, error) {
	c, err := b.s.Begin(ctx, k, stage, fingerprint)
	if c.Lease == nil { // keep a nil *idem.Lease out of the interface
		return Claim{Outcome: c.Outcome, Result: c.Result}, err
	}
	return Claim{Outcome: c.Outcome, Lease: c.Lease, Result: c.Result}, err
}
