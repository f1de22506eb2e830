//go:build compare

package httpapi

import "github.com/oncepay/oncepay/pkg/idem/naive"

// Boundary is the teaching build's boundary: oncepay's or a comparison
// strategy, as IDEM_STRATEGY chose (boundary.go has the production one).
type Boundary = *naive.Boundary

// Lease is the api's ownership of an acquired stage.
type Lease = *naive.Lease
