package idem_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/lua"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/redis/go-redis/v9"
)

// TestExpiredClaimIsTakenOverWhateverTheFingerprint: a holder claims a key
// and dies before completing anything. While its lease is live, a request
// with another payload is told the key is in progress (nothing has been
// accepted for it); once the lease ran out it takes the key over, and its
// payload is the one the key answers for from then on. The dead holder's
// late calls are fenced.
func TestExpiredClaimIsTakenOverWhateverTheFingerprint(t *testing.T) {
	t.Parallel()
	const lease = 150 * time.Millisecond
	s, rdb := newStore(t, idem.Config{Lease: lease})
	ctx := context.Background()
	k := newKey(t)
	dead := begin(t, s, k, "api", "a")

	if _, err := s.Begin(ctx, k, "api", "b"); !errors.Is(err, idem.ErrInProgress) {
		t.Fatalf("another payload while the holder's lease is live: %v, want ErrInProgress", err)
	}
	time.Sleep(lease + 50*time.Millisecond)
	c, err := s.Begin(ctx, k, "api", "b")
	if err != nil {
		t.Fatalf("another payload after the holder's lease ran out: %v, want a takeover", err)
	}
	if c.Outcome != idem.Acquired || c.Attempt != 2 || !c.TakeOver {
		t.Fatalf("claim = %+v, want acquired, attempt 2, takeover", c)
	}
	if fp := rdb.HGet(ctx, k.String(), "api:fp").Val(); fp != "b" {
		t.Errorf("api:fp = %q after the takeover, want the new payload's b", fp)
	}
	if err := dead.Lease.Complete(ctx, []byte("stale")); !errors.Is(err, idem.ErrLost) {
		t.Fatalf("the old holder's late Complete: %v, want ErrLost", err)
	}
	if err := c.Lease.Complete(ctx, []byte("b's answer")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Begin(ctx, k, "api", "a"); !errors.Is(err, idem.ErrMismatch) {
		t.Errorf("the old payload after b completed: %v, want ErrMismatch", err)
	}
	if r := begin(t, s, k, "api", "b"); r.Outcome != idem.Completed || string(r.Result) != "b's answer" {
		t.Errorf("b's retry = %+v, want its answer replayed", r)
	}
}

// stage is the api stage's fields as a test seeds them; lease is relative
// to now (negative: expired), zero for none.
type stage struct {
	state, owner, fp, result, takeover string
	attempt                            int
	lease                              time.Duration
}

func (st stage) seed(ctx context.Context, t *testing.T, rdb *redis.Client, key string) map[string]string {
	t.Helper()
	f := map[string]any{}
	for name, v := range map[string]string{"state": st.state, "owner": st.owner, "fp": st.fp, "result": st.result, "takeover": st.takeover} {
		if v != "" {
			f["api:"+name] = v
		}
	}
	if st.attempt > 0 {
		f["api:attempt"] = st.attempt
	}
	if st.lease != 0 {
		f["api:lease"] = time.Now().Add(st.lease).UnixMilli()
	}
	if len(f) > 0 {
		if err := rdb.HSet(ctx, key, f).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return rdb.HGetAll(ctx, key).Val()
}

// TestBeginDecisionOrder runs begin.lua on every state a stage can be in,
// as the caller "me" with fingerprint "fp": the order its header states.
func TestBeginDecisionOrder(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t, redisDB)
	sc := redis.NewScript(lua.Begin())
	const lease = time.Minute
	for _, tc := range []struct {
		name string
		in   stage
		want string // the reply, lease expiries as "new" (now + lease) or "old" (as seeded)
		same bool   // the hash is left as it was
		fp   string // api:fp afterwards
	}{
		{"absent", stage{}, "[ACQUIRED 1 0 new]", false, "fp"},
		{"released", stage{owner: "me", attempt: 2}, "[ACQUIRED 3 0 new]", false, "fp"},
		{"released after a takeover", stage{owner: "x", attempt: 2, takeover: "1"}, "[ACQUIRED 3 0 new]", false, "fp"},
		{"completed, same fingerprint", stage{state: "C", owner: "x", fp: "fp", result: "r", attempt: 1, lease: -lease}, "[COMPLETED 1 r]", true, "fp"},
		{"completed, other fingerprint", stage{state: "C", owner: "x", fp: "other", result: "r", attempt: 1, lease: -lease}, "[MISMATCH 1]", true, "other"},
		{"pending, mine (a rerun)", stage{state: "P", owner: "me", fp: "fp", attempt: 1, lease: lease}, "[ACQUIRED 1 0 old]", true, "fp"},
		{"pending, mine, a takeover (a rerun)", stage{state: "P", owner: "me", fp: "fp", attempt: 2, lease: lease, takeover: "1"}, "[ACQUIRED 2 1 old]", true, "fp"},
		{"pending, mine, expired (a late rerun)", stage{state: "P", owner: "me", fp: "fp", attempt: 1, lease: -time.Second}, "[ACQUIRED 1 0 old]", true, "fp"},
		{"pending, live, same fingerprint", stage{state: "P", owner: "x", fp: "fp", attempt: 1, lease: lease}, "[IN_PROGRESS 1 left]", true, "fp"},
		{"pending, live, other fingerprint", stage{state: "P", owner: "x", fp: "other", attempt: 1, lease: lease}, "[IN_PROGRESS 1 left]", true, "other"},
		{"pending, expired, same fingerprint", stage{state: "P", owner: "x", fp: "fp", attempt: 1, lease: -time.Second}, "[ACQUIRED 2 1 new]", false, "fp"},
		{"pending, expired, other fingerprint", stage{state: "P", owner: "x", fp: "other", attempt: 1, lease: -time.Second}, "[ACQUIRED 2 1 new]", false, "fp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			key := redistest.Name(t, "begin")
			t.Cleanup(func() { rdb.Del(context.Background(), key) })
			before := tc.in.seed(ctx, t, rdb, key)
			start := time.Now()
			res, err := sc.Run(ctx, rdb, []string{key}, "api", "me", "fp", lease.Milliseconds(), time.Hour.Milliseconds()).Slice()
			if err != nil {
				t.Fatal(err)
			}
			after := rdb.HGetAll(ctx, key).Val()
			if got := replyShape(res, before["api:lease"], start, lease); got != tc.want {
				t.Errorf("reply = %v (%s), want %s", res, got, tc.want)
			}
			if tc.same && !maps.Equal(after, before) {
				t.Errorf("hash = %v, want it unchanged %v", after, before)
			}
			if after["api:fp"] != tc.fp {
				t.Errorf("api:fp = %q, want %q", after["api:fp"], tc.fp)
			}
			if !tc.same && len(res) == 4 {
				tko := after["api:takeover"]
				if tko == "" {
					tko = "0"
				}
				if want := fmt.Sprint(res[2]); after["api:owner"] != "me" || after["api:state"] != "P" || tko != want {
					t.Errorf("hash = %v, want pending, owned by me, takeover %s", after, want)
				}
			}
		})
	}
}

// replyShape writes begin's reply with its times named: "old" for the
// seeded lease, "new" for now + lease, "left" for a positive time left.
func replyShape(res []any, seeded string, start time.Time, lease time.Duration) string {
	out := make([]any, len(res))
	copy(out, res)
	switch out[0] {
	case "ACQUIRED":
		ms, _ := out[3].(int64)
		switch {
		case strconv.FormatInt(ms, 10) == seeded:
			out[3] = "old"
		case ms >= start.Add(lease).UnixMilli()-1000 && ms <= time.Now().Add(lease).UnixMilli()+1000:
			out[3] = "new"
		}
	case "IN_PROGRESS":
		if ms, _ := out[2].(int64); ms > 0 {
			out[2] = "left"
		}
	}
	return fmt.Sprint(out)
}

// TestReleaseIsIdempotentForItsOwner runs release.lua, as the owner "me",
// on every state a stage can be in.
func TestReleaseIsIdempotentForItsOwner(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t, redisDB)
	sc := redis.NewScript(lua.Release())
	for _, tc := range []struct {
		name string
		in   stage
		want string
		left map[string]string // the hash afterwards
	}{
		{"pending, mine", stage{state: "P", owner: "me", fp: "fp", attempt: 1, lease: time.Minute},
			"OK", map[string]string{"api:owner": "me", "api:attempt": "1"}},
		{"released by me (a rerun)", stage{owner: "me", attempt: 1},
			"OK", map[string]string{"api:owner": "me", "api:attempt": "1"}},
		{"released by me, claimed by another", stage{state: "P", owner: "x", fp: "fp", attempt: 2},
			"LOST", map[string]string{"api:state": "P", "api:owner": "x", "api:fp": "fp", "api:attempt": "2"}},
		{"completed by me", stage{state: "C", owner: "me", fp: "fp", result: "r", attempt: 1},
			"LOST", map[string]string{"api:state": "C", "api:owner": "me", "api:fp": "fp", "api:result": "r", "api:attempt": "1"}},
		{"absent", stage{}, "LOST", map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			key := redistest.Name(t, "release")
			t.Cleanup(func() { rdb.Del(context.Background(), key) })
			tc.in.seed(ctx, t, rdb, key)
			got, err := sc.Run(ctx, rdb, []string{key}, "api", "me").Text()
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("release = %s, want %s", got, tc.want)
			}
			if left := rdb.HGetAll(ctx, key).Val(); !maps.Equal(left, tc.left) {
				t.Errorf("hash = %v, want %v", left, tc.left)
			}
		})
	}
}
