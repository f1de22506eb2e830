package naive_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/naive"
	"github.com/redis/go-redis/v9"
)

// redisDB is this package's database on the harness Redis.
const redisDB = 5

func newRedis(t *testing.T) *redis.Client {
	t.Helper()
	opt := redistest.Options(t, redisDB)
	opt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func newKey(t *testing.T, merchant string) idem.Key {
	t.Helper()
	if merchant == "" {
		merchant = redistest.Name(t, "m")
	}
	k, err := idem.NewKey(merchant, redistest.Name(t, "key"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// strategy is what the contract suite needs of a strategy (and of the real
// boundary, which runs the same suite as the reference).
type strategy interface {
	begin(ctx context.Context, k idem.Key, stage, fp string) (outcome idem.Outcome, result []byte, l lease, err error)
}

type lease interface {
	Complete(ctx context.Context, result []byte) error
	Release(ctx context.Context) error
}

type naiveStrategy struct {
	b interface {
		Begin(ctx context.Context, k idem.Key, stage, fp string) (naive.Claim, error)
	}
}

func (s naiveStrategy) begin(ctx context.Context, k idem.Key, stage, fp string) (idem.Outcome, []byte, lease, error) {
	c, err := s.b.Begin(ctx, k, stage, fp)
	if c.Lease == nil {
		return c.Outcome, c.Result, nil, err
	}
	return c.Outcome, c.Result, c.Lease, err
}

type realStrategy struct{ s *idem.Store }

func (s realStrategy) begin(ctx context.Context, k idem.Key, stage, fp string) (idem.Outcome, []byte, lease, error) {
	c, err := s.s.Begin(ctx, k, stage, fp)
	if c.Lease == nil {
		return c.Outcome, c.Result, nil, err
	}
	return c.Outcome, c.Result, c.Lease, err
}

// strategies returns every strategy that keeps results (Trusting keeps
// nothing), and the real boundary, on rdb with cfg.
func strategies(rdb *redis.Client, cfg idem.Config) map[string]strategy {
	return map[string]strategy{
		"oncepay":         realStrategy{idem.New(rdb, cfg)},
		"get-then-set":    naiveStrategy{naive.NewGetThenSet(rdb, cfg)},
		"setnx-marker":    naiveStrategy{naive.NewSetNXMarker(rdb, cfg)},
		"lock-then-check": naiveStrategy{naive.NewLockThenCheck(rdb, cfg, 0)},
	}
}

func mustBegin(t *testing.T, s strategy, k idem.Key, fp string) (idem.Outcome, []byte, lease) {
	t.Helper()
	o, r, l, err := s.begin(context.Background(), k, "api", fp)
	if err != nil {
		t.Fatalf("Begin(%s): %v", k, err)
	}
	return o, r, l
}

// TestContract is what every strategy gets right when nothing goes wrong:
// the first Begin acquires, a completed stage replays its result byte for
// byte, a released stage can be acquired again, and keys are scoped per
// merchant. The real boundary runs the same suite as the reference; the
// failure-window tests in the other files show where they part.
func TestContract(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	for name, s := range strategies(rdb, idem.Config{Lease: 10 * time.Second}) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			t.Run("complete then replay", func(t *testing.T) {
				k := newKey(t, "")
				o, _, l := mustBegin(t, s, k, "fp")
				if o != idem.Acquired || l == nil {
					t.Fatalf("first Begin = %v (lease %v), want acquired", o, l)
				}
				result := []byte("{\"status\":202,\"body\":\"\\u0000 bytes \\u00ff\"}")
				if err := l.Complete(ctx, result); err != nil {
					t.Fatal(err)
				}
				o, got, _ := mustBegin(t, s, k, "fp")
				if o != idem.Completed || string(got) != string(result) {
					t.Fatalf("Begin after Complete = %v %q, want completed %q", o, got, result)
				}
			})
			t.Run("release then acquire", func(t *testing.T) {
				k := newKey(t, "")
				_, _, l := mustBegin(t, s, k, "fp")
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
				if o, _, _ := mustBegin(t, s, k, "fp"); o != idem.Acquired {
					t.Fatalf("Begin after Release = %v, want acquired", o)
				}
			})
			t.Run("scoped per merchant", func(t *testing.T) {
				a := newKey(t, "")
				b, err := idem.NewKey(redistest.Name(t, "other"), a.ID())
				if err != nil {
					t.Fatal(err)
				}
				_, _, l := mustBegin(t, s, a, "fp")
				if err := l.Complete(ctx, []byte(`"a"`)); err != nil {
					t.Fatal(err)
				}
				if o, _, _ := mustBegin(t, s, b, "fp"); o != idem.Acquired {
					t.Fatalf("merchant B with merchant A's key string = %v, want its own acquired stage", o)
				}
			})
		})
	}
}

// TestUnavailable: a strategy that reaches Redis fails closed, with
// idem.ErrUnavailable, like the real boundary.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	for name, s := range strategies(rdb, idem.Config{Timeout: 200 * time.Millisecond}) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, _, _, err := s.begin(context.Background(), newKey(t, ""), "api", "fp"); !errors.Is(err, idem.ErrUnavailable) {
				t.Errorf("Begin without Redis: %v, want idem.ErrUnavailable", err)
			}
		})
	}
}

// TestReusedKeyReplaysAnotherPayload: no naive strategy stores a
// fingerprint, so a key reused for another payload is answered with the
// first payload's result. The real boundary answers ErrMismatch (422).
func TestReusedKeyReplaysAnotherPayload(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	for name, s := range strategies(rdb, idem.Config{}) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			k := newKey(t, "")
			_, _, l := mustBegin(t, s, k, "amount=100")
			if err := l.Complete(context.Background(), []byte(`{"amount":100}`)); err != nil {
				t.Fatal(err)
			}
			o, result, _, err := s.begin(context.Background(), k, "api", "amount=200")
			if name == "oncepay" {
				if !errors.Is(err, idem.ErrMismatch) {
					t.Fatalf("real boundary: Begin with another fingerprint = %v %q, %v; want ErrMismatch", o, result, err)
				}
				return
			}
			if err != nil || o != idem.Completed || string(result) != `{"amount":100}` {
				t.Fatalf("Begin with another payload = %v %q, %v; want the first payload's result replayed", o, result, err)
			}
		})
	}
}
