package idem_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/lua"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/redis/go-redis/v9"
)

// The boundary's contract on every Redis topology it supports: a single
// Redis (the harness's), a Redis Cluster through go-redis's ClusterClient,
// and a Sentinel-watched primary through go-redis's failover client. The
// Cluster and the Sentinel setup are started by this test (redistest,
// REDIS_HA_PORTS) and killed at its end.

// topologyCase is one clause of the contract, run on a fresh key.
type topologyCase struct {
	name  string
	lease time.Duration
	run   func(t *testing.T, s *idem.Store, rdb redis.UniversalClient, k idem.Key)
}

var topologyCases = []topologyCase{
	{"AcquireCompleteReplay", time.Minute, func(t *testing.T, s *idem.Store, rdb redis.UniversalClient, k idem.Key) {
		ctx := context.Background()
		c := begin(t, s, k, "api", "fp")
		if c.Outcome != idem.Acquired || c.Attempt != 1 || c.TakeOver {
			t.Fatalf("first claim = %+v, want acquired attempt 1", c)
		}
		if _, err := s.Begin(ctx, k, "api", "fp"); !errors.Is(err, idem.ErrInProgress) {
			t.Fatalf("Begin while held: %v, want ErrInProgress", err)
		}
		result := []byte{0, 1, 2, 0xff, '{', '}'}
		if err := c.Lease.Complete(ctx, result); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			r := begin(t, s, k, "api", "fp")
			if r.Outcome != idem.Completed || !bytes.Equal(r.Result, result) {
				t.Fatalf("replay = %+v, want completed with %q", r, result)
			}
		}
	}},
	{"ReleaseThenAcquire", time.Minute, func(t *testing.T, s *idem.Store, rdb redis.UniversalClient, k idem.Key) {
		ctx := context.Background()
		c := begin(t, s, k, "charge", "fp")
		if _, err := s.Begin(ctx, k, "charge", "fp"); !errors.Is(err, idem.ErrInProgress) {
			t.Fatalf("Begin while held: %v, want ErrInProgress", err)
		}
		if err := c.Lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
		next := begin(t, s, k, "charge", "fp")
		if next.Outcome != idem.Acquired || next.Attempt != 2 || next.TakeOver {
			t.Fatalf("claim after release = %+v, want acquired attempt 2 without takeover", next)
		}
		if err := c.Lease.Complete(ctx, []byte("x")); !errors.Is(err, idem.ErrLost) {
			t.Fatalf("Complete by the releasing owner: %v, want ErrLost", err)
		}
	}},
	{"ExtendKeepsTheLease", 400 * time.Millisecond, func(t *testing.T, s *idem.Store, rdb redis.UniversalClient, k idem.Key) {
		ctx := context.Background()
		c := begin(t, s, k, "charge", "fp")
		for range 4 {
			time.Sleep(150 * time.Millisecond)
			if err := c.Lease.Extend(ctx); err != nil {
				t.Fatalf("Extend: %v", err)
			}
		}
		if _, err := s.Begin(ctx, k, "charge", "fp"); !errors.Is(err, idem.ErrInProgress) {
			t.Fatalf("Begin after 600ms of extends on a 400ms lease: %v, want ErrInProgress", err)
		}
	}},
	{"TakeoverFencesTheStaleOwner", 150 * time.Millisecond, func(t *testing.T, s *idem.Store, rdb redis.UniversalClient, k idem.Key) {
		ctx := context.Background()
		first := begin(t, s, k, "charge", "fp")
		if first.Outcome != idem.Acquired || first.Attempt != 1 || first.TakeOver {
			t.Fatalf("first claim = %+v, want acquired attempt 1", first)
		}
		time.Sleep(250 * time.Millisecond) // the first owner stalls past its lease
		second := begin(t, s, k, "charge", "fp")
		if second.Outcome != idem.Acquired || second.Attempt != 2 || !second.TakeOver {
			t.Fatalf("second claim = %+v, want takeover with attempt 2", second)
		}
		for name, op := range map[string]func(context.Context) error{
			"Extend": first.Lease.Extend, "Release": first.Lease.Release,
			"Complete": func(ctx context.Context) error { return first.Lease.Complete(ctx, []byte("stale")) },
		} {
			if err := op(ctx); !errors.Is(err, idem.ErrLost) {
				t.Fatalf("stale %s: %v, want ErrLost", name, err)
			}
		}
		if got, _ := rdb.HGet(ctx, k.String(), "charge:owner").Result(); got != second.Lease.Owner() {
			t.Fatalf("owner after stale calls = %q, want the second owner %q", got, second.Lease.Owner())
		}
		if err := second.Lease.Complete(ctx, []byte("fresh")); err != nil {
			t.Fatal(err)
		}
		if err := first.Lease.Complete(ctx, []byte("stale")); !errors.Is(err, idem.ErrLost) {
			t.Fatalf("stale Complete after completion: %v, want ErrLost", err)
		}
		if r := begin(t, s, k, "charge", "fp"); r.Outcome != idem.Completed || string(r.Result) != "fresh" {
			t.Fatalf("replay = %+v, want completed with %q", r, "fresh")
		}
	}},
	{"FingerprintMismatch", time.Minute, func(t *testing.T, s *idem.Store, rdb redis.UniversalClient, k idem.Key) {
		ctx := context.Background()
		c := begin(t, s, k, "api", "fp-1")
		// Nothing is accepted while the first is in flight: in progress.
		if _, err := s.Begin(ctx, k, "api", "fp-2"); !errors.Is(err, idem.ErrInProgress) {
			t.Fatalf("Begin with another fingerprint while pending: %v, want ErrInProgress", err)
		}
		if err := c.Lease.Complete(ctx, []byte("r")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Begin(ctx, k, "api", "fp-2"); !errors.Is(err, idem.ErrMismatch) {
			t.Fatalf("Begin with another fingerprint after completion: %v, want ErrMismatch", err)
		}
	}},
	{"StagesAreIndependentInOneHash", time.Minute, func(t *testing.T, s *idem.Store, rdb redis.UniversalClient, k idem.Key) {
		ctx := context.Background()
		api := begin(t, s, k, "api", "http-fp")
		if err := api.Lease.Complete(ctx, []byte("202")); err != nil {
			t.Fatal(err)
		}
		charge := begin(t, s, k, "charge", "msg-fp")
		if charge.Outcome != idem.Acquired || charge.Attempt != 1 {
			t.Fatalf("charge after api completed = %+v, want acquired attempt 1", charge)
		}
		fields, err := rdb.HGetAll(ctx, k.String()).Result()
		if err != nil {
			t.Fatal(err)
		}
		if fields["api:state"] != "C" || fields["charge:state"] != "P" {
			t.Fatalf("hash = %v, want api completed and charge pending in one record", fields)
		}
		if r := begin(t, s, k, "api", "http-fp"); r.Outcome != idem.Completed || string(r.Result) != "202" {
			t.Fatalf("api replay while charge pending = %+v", r)
		}
		if err := charge.Lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if r := begin(t, s, k, "api", "http-fp"); r.Outcome != idem.Completed {
			t.Fatalf("releasing charge touched api: %+v", r)
		}
		if fields, err = rdb.HGetAll(ctx, k.String()).Result(); err != nil {
			t.Fatal(err)
		}
		if fields["api:state"] != "C" || fields["charge:state"] != "" || fields["charge:attempt"] != "1" {
			t.Fatalf("hash = %v, want api completed and charge released with attempt 1", fields)
		}
	}},
	{"RaceOneWinner", 10 * time.Second, func(t *testing.T, s *idem.Store, rdb redis.UniversalClient, k idem.Key) {
		const n = 64
		var (
			wg             sync.WaitGroup
			mu             sync.Mutex
			acquired, busy int
			other          []error
			start          = make(chan struct{})
		)
		for range n {
			wg.Go(func() {
				<-start
				c, err := s.Begin(context.Background(), k, "api", "fp")
				mu.Lock()
				defer mu.Unlock()
				var ip *idem.InProgressError
				switch {
				case err == nil && c.Outcome == idem.Acquired:
					acquired++
				case errors.As(err, &ip) && ip.RetryAfter > 0 && ip.RetryAfter <= 10*time.Second:
					busy++
				default:
					other = append(other, fmt.Errorf("claim %+v, err %v", c, err))
				}
			})
		}
		close(start)
		wg.Wait()
		if acquired != 1 || busy != n-1 || len(other) != 0 {
			t.Fatalf("%d goroutines: acquired %d, in progress %d, other %v; want 1, %d, none", n, acquired, busy, other, n-1)
		}
	}},
}

// topology is one Redis deployment the boundary runs on.
type topology struct {
	name string
	rdb  redis.UniversalClient
}

func TestContractOnEveryTopology(t *testing.T) {
	single := redis.NewClient(func() *redis.Options {
		o := redistest.Options(t, redisDB)
		o.ContextTimeoutEnabled = true
		return o
	}())
	t.Cleanup(func() { _ = single.Close() })
	tops := []topology{
		{"Single", single},
		{"Cluster", redistest.StartCluster(t).Client()},
		{"Sentinel", redistest.StartSentinel(t).Client()},
	}
	for _, top := range tops {
		t.Run(top.name, func(t *testing.T) {
			for _, tc := range topologyCases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					s := idem.New(top.rdb, idem.Config{Lease: tc.lease})
					tc.run(t, s, top.rdb, newKey(t))
				})
			}
		})
	}
}

// Every script takes exactly one key, the operation's hash: on a cluster
// it cannot span slots, and go-redis routes EVALSHA by that key.
func TestScriptsTouchOneKey(t *testing.T) {
	re := regexp.MustCompile(`KEYS\[(\d+)\]`)
	for name, src := range map[string]string{
		"begin": lua.Begin(), "complete": lua.Complete(), "release": lua.Release(), "extend": lua.Extend(),
	} {
		for _, m := range re.FindAllStringSubmatch(src, -1) {
			if m[1] != "1" {
				t.Errorf("%s.lua uses %s: a second key may live in another cluster slot", name, m[0])
			}
		}
	}
}
