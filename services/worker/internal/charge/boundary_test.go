//go:build !compare

package charge

import "github.com/oncepay/oncepay/pkg/idem"

// boundaryOf returns s as this build's Boundary.
func boundaryOf(s *idem.Store) Boundary { return s }
