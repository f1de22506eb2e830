//go:build unix

package idemhttp_test

import (
	"syscall"
	"testing"
)

// processCPU returns the CPU time this process has used (user + system),
// in ns.
func processCPU(b *testing.B) int64 {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
