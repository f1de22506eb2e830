//go:build compare

package charge

import "github.com/oncepay/oncepay/pkg/idem/naive"

// Boundary is the teaching build's boundary: oncepay's or a comparison
// strategy, as IDEM_STRATEGY chose (boundary.go has the production one).
type Boundary = *naive.Boundary

// pspKey is the Idempotency-Key the worker sends the psp for m, as the
// strategy of b decides (naive.Boundary.PSPKey): the propagated key,
// PSPKey, or a fresh one per attempt.
func pspKey(b Boundary, m Initiated) string { return b.PSPKey(PSPKey(m)) }
