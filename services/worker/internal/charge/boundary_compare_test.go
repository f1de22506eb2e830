//go:build compare

package charge

import (
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/naive"
)

// boundaryOf returns s as this build's Boundary.
func boundaryOf(s *idem.Store) Boundary { return naive.Real(s) }
