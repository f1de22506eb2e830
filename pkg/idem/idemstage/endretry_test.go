package idemstage_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemstage"
)

// lockedBuffer is a log sink safe for concurrent writes.
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

// TestOnEndRetry: Redis goes away while the work ends (a private server is
// stopped in the work and started again after the outage). OnEndRetry is
// told once how the retried Complete or Release ended, and the stage's
// lines go to the logger of WithLogger, not to the Stage's own.
func TestOnEndRetry(t *testing.T) {
	t.Parallel()
	errDown := errors.New("provider down")
	tests := []struct {
		name     string
		outage   time.Duration
		endRetry time.Duration
		fail     bool // the work fails: Release
		steal    bool // another owner takes the stage during the work
		wantOp   idem.Op
		want     string
		wantErr  error // nil: Do returns no error
	}{
		{"complete recovered", 300 * time.Millisecond, 10 * time.Second, false, false, idem.OpComplete, idemstage.EndRecovered, nil},
		{"release recovered", 300 * time.Millisecond, 10 * time.Second, true, false, idem.OpRelease, idemstage.EndRecovered, errDown},
		{"complete lost", 300 * time.Millisecond, 10 * time.Second, false, true, idem.OpComplete, idemstage.EndLost, nil},
		{"complete gave up", 2 * time.Second, 300 * time.Millisecond, false, false, idem.OpComplete, idemstage.EndGaveUp, idem.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.StartServer(t)
			rdb := srv.Client()
			store := idem.New(rdb, idem.Config{Lease: 10 * time.Second, Timeout: 200 * time.Millisecond})
			var own, perCall lockedBuffer
			type call struct {
				op      idem.Op
				outcome string
			}
			var mu sync.Mutex
			var calls []call
			s := idemstage.New(store, idemstage.Config{Stage: "ship", EndRetry: tt.endRetry,
				Logger: slog.New(slog.NewTextHandler(&own, nil)),
				OnEndRetry: func(op idem.Op, outcome string) {
					mu.Lock()
					defer mu.Unlock()
					calls = append(calls, call{op, outcome})
				}})
			k := newKey(t)
			var back <-chan struct{}
			_, err := s.WithLogger(slog.New(slog.NewTextHandler(&perCall, nil)).With("message_id", "msg-1")).Do(context.Background(), k, "fp",
				func(ctx context.Context, _ idemstage.Attempt) ([]byte, error) {
					if tt.steal {
						if err := rdb.HSet(ctx, k.String(), "ship:owner", "thief").Err(); err != nil {
							t.Error(err)
						}
					}
					back = srv.Outage(tt.outage)
					if tt.fail {
						return nil, errDown
					}
					return []byte("shipped"), nil
				})
			<-back
			if tt.wantErr == nil && err != nil || !errors.Is(err, tt.wantErr) {
				t.Errorf("Do: %v, want %v", err, tt.wantErr)
			}
			mu.Lock()
			got := calls
			mu.Unlock()
			if want := []call{{tt.wantOp, tt.want}}; len(got) != 1 || got[0] != want[0] {
				t.Errorf("OnEndRetry calls %v, want %v", got, want)
			}
			if log := perCall.String(); !strings.Contains(log, "boundary unavailable; retrying") || !strings.Contains(log, "message_id=msg-1") {
				t.Errorf("WithLogger's log = %q, want the retry, with the message's attributes", log)
			}
			if log := own.String(); log != "" {
				t.Errorf("the Stage's own logger got %q, want nothing (WithLogger's copy logs elsewhere)", log)
			}
		})
	}
}
