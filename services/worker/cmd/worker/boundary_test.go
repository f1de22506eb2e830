//go:build !compare

package main

import (
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/services/worker/internal/charge"
)

// boundaryOf returns s as this build's charge.Boundary.
func boundaryOf(s *idem.Store) charge.Boundary { return s }
