package naive

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/oncepay/oncepay/pkg/idem"
)

// Boundary is the idempotency boundary of the services' teaching build
// (go build -tags compare): it has idem.Store's Begin, and answers with
// oncepay's boundary or with one of the strategies, as IDEM_STRATEGY
// chose. The production build uses *idem.Store itself and never links this
// package. It is safe for concurrent use.
type Boundary struct {
	real     *idem.Store
	strategy interface {
		Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (Claim, error)
	}
	unalias bool
	fresh   bool
}

// Real returns oncepay's boundary s as a Boundary: every claim, lease and
// error is s's.
func Real(s *idem.Store) *Boundary { return &Boundary{real: s} }

// Unaliased returns oncepay's boundary s as a Boundary that claims a key
// NoBackstopAlias made under the client's key (NoBackstopKey), where a
// system without the UNIQUE (merchant_id, idempotency_key) constraint
// would have it: the worker of StrategyNoBackstop.
func Unaliased(s *idem.Store) *Boundary { return &Boundary{real: s, unalias: true} }

// Of returns strategy s (GetThenSet, SetNXMarker, LockThenCheck,
// Trusting) as a Boundary. With freshPSPKey, PSPKey makes a new key per
// call, as a worker does when nobody designed key propagation.
func Of(s interface {
	Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (Claim, error)
}, freshPSPKey bool) *Boundary {
	return &Boundary{strategy: s, fresh: freshPSPKey}
}

// PSPKey returns the Idempotency-Key the worker sends the psp for the
// payment whose propagated key is key (<merchant_id>:<idempotency_key>):
// key itself; for Unaliased, the client's key of an alias; for a
// strategy made with freshPSPKey, key plus ":attempt-<random>", new on
// every call, which makes the psp's own idempotency useless, so a retry
// after a lost psp answer charges again.
func (b *Boundary) PSPKey(key string) string {
	switch {
	case b.fresh:
		var r [8]byte
		_, _ = rand.Read(r[:]) // crypto/rand.Read never fails (Go 1.24+)
		return key + ":attempt-" + hex.EncodeToString(r[:])
	case b.unalias:
		return NoBackstopKey(key)
	}
	return key
}

// Begin claims stage of k, as idem.Store.Begin does. A claim of the real
// boundary carries its idem.Claim's fields; its Lease delegates to the
// *idem.Lease.
func (b *Boundary) Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (Claim, error) {
	if b.strategy != nil {
		return b.strategy.Begin(ctx, k, stage, fingerprint)
	}
	if b.unalias {
		if key, err := idem.NewKey(k.Merchant(), NoBackstopKey(k.ID())); err == nil {
			k = key
		}
	}
	c, err := b.real.Begin(ctx, k, stage, fingerprint)
	out := Claim{Outcome: c.Outcome, Attempt: c.Attempt, TakeOver: c.TakeOver, Result: c.Result}
	if c.Lease != nil {
		out.Lease = &Lease{real: c.Lease}
	}
	return out, err
}
