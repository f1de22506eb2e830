//go:build !compare

package charge

import (
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemstage"
)

// Boundary is the idempotency boundary the handler and the reconciler
// claim the charge stage with: oncepay's, *idem.Store. The teaching build
// (go build -tags compare, boundary_compare.go) swaps in package naive's
// Boundary, which has the same Begin, Claim and Lease shape; the
// production build never links package naive.
type Boundary = *idem.Store

// NewStage returns the charge stage on b (idemstage.New): the handler's
// and the reconciler's.
func NewStage(b Boundary, cfg idemstage.Config) *idemstage.Stage { return idemstage.New(b, cfg) }

// pspKey is the Idempotency-Key the worker sends the psp for m: always
// the propagated key, PSPKey.
func pspKey(_ Boundary, m Initiated) string { return PSPKey(m) }
