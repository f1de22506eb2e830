package naive_test

import (
	"context"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncepay/oncepay/pkg/idem/naive"
)

// lockedBuffer is a log sink that the announcing goroutine and the test
// may use at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestAnnounceLogsUntilDoneAndNamesTheStrategy(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	s := naive.StrategyGetThenSet
	got := s.Announce(ctx, slog.New(slog.NewTextHandler(&logs, nil)), 10*time.Millisecond)
	want := map[string]string{"idempotency_strategy": "get-then-set", "warning": s.Warning()}
	if !maps.Equal(got, want) {
		t.Errorf("Announce details = %v, want %v", got, want)
	}
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(logs.String(), "level=WARN") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("after 5s, logs = %q; want the warning at WARN at least twice", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	time.Sleep(50 * time.Millisecond) // a tick in flight may still log once
	n := strings.Count(logs.String(), "level=WARN")
	time.Sleep(50 * time.Millisecond)
	if m := strings.Count(logs.String(), "level=WARN"); m != n {
		t.Errorf("after ctx ended, warnings went on: %d, then %d", n, m)
	}
}
