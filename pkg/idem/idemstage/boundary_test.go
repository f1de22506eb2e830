package idemstage_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemstage"
)

// memBoundary is a Boundary in memory, with no owners and no heartbeat,
// as a teaching build's comparison strategy is: it records what Do asked
// of it.
type memBoundary struct {
	mu       sync.Mutex
	results  map[string][]byte
	takeOver bool  // the next claim takes over
	release  error // what Release returns
	ops      []string
}

func (m *memBoundary) record(op string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops = append(m.ops, op)
}

func (m *memBoundary) Begin(_ context.Context, k idem.Key, stage, _ string) (idemstage.Claim, error) {
	m.record("begin " + stage)
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.results[k.String()]; ok {
		return idemstage.Claim{Outcome: idem.Completed, Result: r}, nil
	}
	return idemstage.Claim{Outcome: idem.Acquired, Attempt: 7, TakeOver: m.takeOver, Lease: &memLease{m, k.String()}}, nil
}

type memLease struct {
	m   *memBoundary
	key string
}

func (l *memLease) Keep(ctx context.Context) (context.Context, func()) {
	l.m.record("keep")
	return ctx, func() {}
}

func (l *memLease) Complete(_ context.Context, result []byte) error {
	l.m.record("complete " + string(result))
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	l.m.results[l.key] = result
	return nil
}

func (l *memLease) Release(context.Context) error {
	l.m.record("release")
	return l.m.release
}

// TestNewOnRunsTheStageOnItsBoundary: a Stage of NewOn claims, keeps and
// ends the stage through the Boundary it was given, tells the work the
// claim's attempt and takeover, and replays what that boundary stored.
func TestNewOnRunsTheStageOnItsBoundary(t *testing.T) {
	t.Parallel()
	b := &memBoundary{results: map[string][]byte{}, takeOver: true}
	s := idemstage.NewOn(b, idemstage.Config{Stage: "ship"})
	k, err := idem.NewKey("m", "k")
	if err != nil {
		t.Fatal(err)
	}
	errDown := errors.New("provider down")
	var attempts []idemstage.Attempt
	work := func(fail bool) idemstage.Work {
		return func(_ context.Context, a idemstage.Attempt) ([]byte, error) {
			attempts = append(attempts, a)
			if fail {
				return nil, errDown
			}
			return []byte("trk-1"), nil
		}
	}
	ctx := context.Background()
	tests := []struct {
		name     string
		fail     bool
		wantErr  error
		want     string
		replayed bool
	}{
		{"failure releases", true, errDown, "", false},
		{"success completes", false, nil, "trk-1", false},
		{"redelivery replays", false, nil, "trk-1", true},
	}
	for _, tt := range tests {
		d, err := s.Do(ctx, k, "fp", work(tt.fail))
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Fatalf("%s: err %v, want %v", tt.name, err, tt.wantErr)
		}
		if string(d.Result) != tt.want || d.Replayed != tt.replayed {
			t.Errorf("%s: got %q replayed %v, want %q replayed %v", tt.name, d.Result, d.Replayed, tt.want, tt.replayed)
		}
	}
	if got, want := fmt.Sprint(b.ops), "[begin ship keep release begin ship keep complete trk-1 begin ship]"; got != want {
		t.Errorf("boundary calls %s, want %s", got, want)
	}
	want := idemstage.Attempt{Key: k, Number: 7, TakeOver: true}
	if len(attempts) != 2 || attempts[0] != want || attempts[1] != want {
		t.Errorf("work told %+v, want %+v twice", attempts, want)
	}
}

// TestWithLoggerLeavesTheStage: WithLogger's copy logs to its logger; the
// Stage it was made from keeps logging to its own.
func TestWithLoggerLeavesTheStage(t *testing.T) {
	t.Parallel()
	b := &memBoundary{results: map[string][]byte{}, release: errors.New("release refused")}
	var own, other lockedBuffer
	s := idemstage.NewOn(b, idemstage.Config{Stage: "ship", Logger: slog.New(slog.NewTextHandler(&own, nil))})
	k, err := idem.NewKey("m", "k")
	if err != nil {
		t.Fatal(err)
	}
	fail := func(context.Context, idemstage.Attempt) ([]byte, error) { return nil, errors.New("provider down") }
	msg := s.WithLogger(slog.New(slog.NewTextHandler(&other, nil)).With("message_id", "msg-1"))
	for _, tt := range []struct {
		name  string
		stage *idemstage.Stage
		want  *lockedBuffer
		quiet *lockedBuffer
	}{
		{"the stage", s, &own, &other},
		{"its copy", msg, &other, &own},
	} {
		before := tt.quiet.String()
		_, _ = tt.stage.Do(context.Background(), k, "fp", fail)
		if got := tt.want.String(); !strings.Contains(got, "stage not released") {
			t.Errorf("%s: its logger got %q, want the failed release", tt.name, got)
		}
		if got := tt.quiet.String(); got != before {
			t.Errorf("%s: the other logger got %q", tt.name, strings.TrimPrefix(got, before))
		}
	}
	if got := other.String(); !strings.Contains(got, "message_id=msg-1") {
		t.Errorf("the copy's line %q lacks the logger's attributes", got)
	}
}
