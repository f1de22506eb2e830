// Package logtest gives tests a log sink that the code under test may
// write to from its goroutines while the test reads it. It is test rig:
// product code must not import it. It needs only the standard library, so
// the library's tests (pkg/idem) may use it without adding to its module
// graph.
package logtest

import (
	"strings"
	"sync"
)

// Buffer is an io.Writer for a log handler (slog.NewTextHandler(&b, nil))
// whose writes and reads are safe for concurrent use. The zero value is
// an empty buffer ready to use; a Buffer must not be copied after first
// use.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p; it never fails.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
