//go:build compare

package charge

import (
	"context"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemstage"
	"github.com/oncepay/oncepay/pkg/idem/naive"
)

// Boundary is the teaching build's boundary: oncepay's or a comparison
// strategy, as IDEM_STRATEGY chose (boundary.go has the production one).
type Boundary = *naive.Boundary

// NewStage returns the charge stage on b, the handler's and the
// reconciler's, through idemstage.NewOn: a strategy's lease has no owner
// and no heartbeat (naive.Lease), and the stage runs on it as it would on
// oncepay's.
func NewStage(b Boundary, cfg idemstage.Config) *idemstage.Stage {
	return idemstage.NewOn(naiveBoundary{b}, cfg)
}

// naiveBoundary is a naive.Boundary as an idemstage.Boundary.
type naiveBoundary struct{ b *naive.Boundary }

func (n naiveBoundary) Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (idemstage.Claim, error) {
	c, err := n.b.Begin(ctx, k, stage, fingerprint)
	if err != nil {
		return idemstage.Claim{}, err
	}
	claim := idemstage.Claim{Outcome: c.Outcome, Attempt: c.Attempt, TakeOver: c.TakeOver, Result: c.Result}
	if c.Lease != nil {
		claim.Lease = c.Lease
	}
	return claim, nil
}

// pspKey is the Idempotency-Key the worker sends the psp for m, as the
// strategy of b decides (naive.Boundary.PSPKey): the propagated key,
// PSPKey, or a fresh one per attempt.
func pspKey(b Boundary, m Initiated) string { return b.PSPKey(PSPKey(m)) }
