package naive

import (
	"context"
	"errors"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/redis/go-redis/v9"
)

// DefaultLock is LockThenCheck's lock TTL when none is given: long enough
// for two Redis round trips.
const DefaultLock = 500 * time.Millisecond

// LockThenCheck is the two-phase lock pattern: a short lock around
// check-and-mark, the work outside it, the completion written
// unconditionally.
//
//	SET key:lock 1 NX PX lock        -> taken: "in progress"
//	GET key                          -> result: replay it; marker: "in progress"
//	SET key "in-progress" PX lease   (nothing stored: mark it)
//	DEL key:lock
//	... work, outside the lock ...
//	SET key result EX retention      after the work, whoever holds the mark now
//	DEL key                          after an error, whoever holds the mark now
//
// The mark expires after the lease, so a crashed owner no longer blocks the
// key for good; but an owner that is merely slow (a long psp call, a GC
// pause, a partition) outlives its mark, a second owner runs the same work,
// and whichever completes last overwrites the other's result. Nothing tells
// the first owner that it lost the key. The lock's own DEL is just as
// unconditional. It is safe for concurrent use.
type LockThenCheck struct {
	rdb  Commands
	cfg  idem.Config
	lock time.Duration
}

// NewLockThenCheck returns the strategy on rdb. lock is the lock's TTL
// (DefaultLock when zero); cfg.Lease is the mark's TTL, cfg.Retention the
// result's, cfg.Timeout bounds every Redis call and cfg.Observe (optional)
// sees every operation; zero fields take idem's defaults.
func NewLockThenCheck(rdb Commands, cfg idem.Config, lock time.Duration) *LockThenCheck {
	if lock <= 0 {
		lock = DefaultLock
	}
	return &LockThenCheck{rdb: rdb, cfg: defaults(cfg), lock: lock}
}

// Begin claims stage of k under the lock: Completed with a stored result,
// an *idem.InProgressError while the lock or a live mark is there, Acquired
// after marking the key. The fingerprint is ignored. Redis errors wrap
// idem.ErrUnavailable.
func (s *LockThenCheck) Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (Claim, error) {
	return timedBegin(ctx, s.cfg, k, stage, func(ctx context.Context, key string) (Claim, error) {
		return s.begin(ctx, key, stage)
	})
}

func (s *LockThenCheck) begin(ctx context.Context, key, stage string) (Claim, error) {
	lock := key + ":lock"
	locked, err := s.rdb.SetNX(ctx, lock, "1", s.lock).Result()
	switch {
	case err != nil:
		return Claim{}, unavailable(idem.OpBegin, key, err)
	case !locked:
		return Claim{}, inProgress()
	}
	defer s.rdb.Del(context.WithoutCancel(ctx), lock)

	v, err := s.rdb.Get(ctx, key).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
	case err != nil:
		return Claim{}, unavailable(idem.OpBegin, key, err)
	case string(v) == Marker:
		return Claim{}, inProgress()
	default:
		return Claim{Outcome: idem.Completed, Result: v}, nil
	}
	if err := s.rdb.Set(ctx, key, Marker, s.cfg.Lease).Err(); err != nil {
		return Claim{}, unavailable(idem.OpBegin, key, err)
	}
	return Claim{Outcome: idem.Acquired, Lease: &Lease{
		key: key, stage: stage, cfg: s.cfg,
		complete: storeResult(s.rdb, key, s.cfg.Retention), release: deleteKey(s.rdb, key),
	}}, nil
}
