package idemhttp

import (
	"context"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
)

// Boundary claims a stage of a key: *idem.Store through Store, or another
// implementation of the same contract (idem.Store.Begin).
type Boundary interface {
	Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (Claim, error)
}

// Claim is what Begin found: Outcome idem.Acquired with a Lease, or
// idem.Completed with the stored Result.
type Claim struct {
	Outcome idem.Outcome
	Lease   Lease
	Result  []byte
}

// Lease is the ownership of an acquired stage (idem.Lease).
type Lease interface {
	Complete(ctx context.Context, result []byte) error
	CompleteAs(ctx context.Context, fingerprint string, result []byte) error
	Release(ctx context.Context) error
	// Deadline is when the holder's work must have stopped: the send
	// time of Begin plus the lease minus the store's margin.
	Deadline() time.Time
}

// Store returns s as a Boundary.
func Store(s *idem.Store) Boundary { return store{s} }

type store struct{ s *idem.Store }

func (b store) Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (Claim, error) {
	c, err := b.s.Begin(ctx, k, stage, fingerprint)
	if err != nil {
		return Claim{}, err
	}
	claim := Claim{Outcome: c.Outcome, Result: c.Result}
	if c.Lease != nil {
		claim.Lease = c.Lease
	}
	return claim, nil
}
