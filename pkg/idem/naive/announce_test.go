package naive_test

import (
	"context"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/logtest"
	"github.com/oncepay/oncepay/pkg/idem/naive"
)

func TestAnnounceLogsUntilDoneAndNamesTheStrategy(t *testing.T) {
	t.Parallel()
	var logs logtest.Buffer
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
