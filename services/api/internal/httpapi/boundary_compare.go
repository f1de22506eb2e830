//go:build compare

package httpapi

import (
	"context"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemhttp"
	"github.com/oncepay/oncepay/pkg/idem/naive"
)

// Boundary is the teaching build's boundary: oncepay's or a comparison
// strategy, as IDEM_STRATEGY chose (boundary.go has the production one).
type Boundary = *naive.Boundary

// Lease is the api's ownership of an acquired stage.
type Lease = *naive.Lease

// httpBoundary returns b for the idempotency middleware. A strategy's
// lease has no deadline of its own: the work gets workTimeout less a
// tenth (idem's default margin), counted from before Begin was sent.
func httpBoundary(b Boundary, workTimeout time.Duration) idemhttp.Boundary {
	return naiveBoundary{b: b, work: workTimeout}
}

type naiveBoundary struct {
	b    *naive.Boundary
	work time.Duration
}

func (n naiveBoundary) Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (idemhttp.Claim, error) {
	deadline := time.Now().Add(n.work - n.work/10)
	c, err := n.b.Begin(ctx, k, stage, fingerprint)
	if err != nil {
		return idemhttp.Claim{}, err
	}
	claim := idemhttp.Claim{Outcome: c.Outcome, Result: c.Result}
	if c.Lease != nil {
		claim.Lease = naiveLease{c.Lease, deadline}
	}
	return claim, nil
}

type naiveLease struct {
	*naive.Lease
	deadline time.Time
}

func (l naiveLease) Deadline() time.Time { return l.deadline }
