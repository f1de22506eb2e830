package naive

import (
	"context"
	"log/slog"
	"time"
)

// Announce makes s impossible to miss in a process that runs it: it logs
// s's Warning at WARN now and every interval until ctx ends (in a
// goroutine of its own; it returns at once) and returns the readiness
// details that name s, idempotency_strategy and warning.
func (s Strategy) Announce(ctx context.Context, log *slog.Logger, every time.Duration) map[string]string {
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			log.Warn(s.Warning(), "idem_strategy", string(s))
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return map[string]string{"idempotency_strategy": string(s), "warning": s.Warning()}
}
