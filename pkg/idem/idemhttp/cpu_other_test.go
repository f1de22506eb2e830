//go:build !unix

package idemhttp_test

import "testing"

// processCPU is 0 where getrusage is missing: cpu-ns/op reads 0.
func processCPU(*testing.B) int64 { return 0 }
