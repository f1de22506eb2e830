package outbox_test

import (
	"sync"
	"testing"
	"time"
)

// concurrently runs every pass in a loop of its own, at the same time, as
// replicas would, until the passes have handled want items in total or 15 s
// have gone by, and returns the total. A pass that handles nothing waits a
// moment (not connected yet, or the other replica holds the rest). A pass
// error fails the test.
func concurrently(t *testing.T, want int, passes ...func() (int, error)) int {
	t.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int
	)
	deadline := time.Now().Add(15 * time.Second)
	for _, pass := range passes {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				n, err := pass()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				total += n
				done := total >= want
				mu.Unlock()
				if done {
					return
				}
				if n == 0 {
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	return total
}
