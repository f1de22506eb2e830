package idem

import (
	"context"
	"errors"
	"testing"
)

// redisReply is an error reply as go-redis returns it (a redis.Error).
type redisReply string

func (e redisReply) Error() string { return string(e) }
func (redisReply) RedisError()     {}

// TestIsOOM: Redis's out-of-memory refusal is recognised in both wordings a
// script's failed write can come back in, and nothing else is.
func TestIsOOM(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"redis 7: the OOM reply passed on", redisReply("OOM command not allowed when used memory > 'maxmemory'."), true},
		{"redis 6: inside the script's error", redisReply("ERR Error running script (call to f_3c1e9f2b): @user_script:43: @user_script: 43: -OOM command not allowed when used memory > 'maxmemory'. "), true},
		{"wrapped", errors.Join(errors.New("begin"), redisReply("OOM command not allowed when used memory > 'maxmemory'.")), true},
		{"another script error", redisReply("ERR Error running script (call to f_3c1e9f2b): @user_script:1: WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{"the words outside a Redis reply", errors.New("dial tcp: OOM command not allowed"), false},
		{"a timeout", context.DeadlineExceeded, false},
		{"nil", nil, false},
	} {
		if got := isOOM(tt.err); got != tt.want {
			t.Errorf("%s: isOOM(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
	err := unavailable("begin", Key{}, redisReply("OOM command not allowed when used memory > 'maxmemory'."))
	if !errors.Is(err, ErrFull) || !errors.Is(err, ErrUnavailable) || resultOutcome(err) != OutcomeFull {
		t.Errorf("unavailable(OOM reply) = %v (outcome %q), want ErrFull and ErrUnavailable, outcome %q", err, resultOutcome(err), OutcomeFull)
	}
	err = unavailable("begin", Key{}, context.DeadlineExceeded)
	if errors.Is(err, ErrFull) || !errors.Is(err, ErrUnavailable) || resultOutcome(err) != OutcomeUnavailable {
		t.Errorf("unavailable(timeout) = %v (outcome %q), want ErrUnavailable only, outcome %q", err, resultOutcome(err), OutcomeUnavailable)
	}
}
