//go:build !compare

package httpapi

import (
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemhttp"
)

// Boundary is the idempotency boundary the api claims its stage with:
// oncepay's, *idem.Store. The teaching build (go build -tags compare,
// boundary_compare.go) swaps in package naive's Boundary, which has the
// same Begin, Claim and Lease shape; the production build never links
// package naive.
type Boundary = *idem.Store

// Lease is the api's ownership of an acquired stage.
type Lease = *idem.Lease

// httpBoundary returns b for the idempotency middleware.
func httpBoundary(b Boundary, _ time.Duration) idemhttp.Boundary { return idemhttp.Store(b) }
