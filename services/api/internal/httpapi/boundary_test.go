//go:build !compare

package httpapi

import "github.com/oncepay/oncepay/pkg/idem"

// boundaryOf returns s as this build's Boundary.
func boundaryOf(s *idem.Store) Boundary { return s }
