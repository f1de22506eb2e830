package naive

import (
	"context"
	"errors"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/redis/go-redis/v9"
)

// GetThenSet is check-then-act: read the key, run the work if nothing is
// stored, then write the result.
//
//	GET key          -> result: replay it
//	                 -> nothing: run
//	SET key result   after the work
//
// Nothing is written before the work runs, so every request that reads
// before the first one completes runs the work too: concurrent duplicates,
// a client's retry after a timeout, a redelivery while the first delivery
// still charges. A crashed run leaves nothing behind, so the retry runs it
// again. It is safe for concurrent use.
type GetThenSet struct {
	rdb Commands
	cfg idem.Config
}

// NewGetThenSet returns the strategy on rdb. cfg.Retention is the result's
// TTL, cfg.Timeout bounds every Redis call, cfg.Observe (optional) sees
// every operation; zero fields take idem's defaults.
func NewGetThenSet(rdb Commands, cfg idem.Config) *GetThenSet {
	return &GetThenSet{rdb: rdb, cfg: defaults(cfg)}
}

// Begin reads stage of k: Completed with the stored result, or Acquired
// when nothing is stored. The fingerprint is ignored. Redis errors wrap
// idem.ErrUnavailable.
func (s *GetThenSet) Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (Claim, error) {
	return timedBegin(ctx, s.cfg, k, stage, func(ctx context.Context, key string) (Claim, error) {
		v, err := s.rdb.Get(ctx, key).Bytes()
		switch {
		case errors.Is(err, redis.Nil):
			return Claim{Outcome: idem.Acquired, Lease: &Lease{
				key: key, stage: stage, cfg: s.cfg,
				complete: storeResult(s.rdb, key, s.cfg.Retention), release: nothing,
			}}, nil
		case err != nil:
			return Claim{}, unavailable(idem.OpBegin, key, err)
		}
		return Claim{Outcome: idem.Completed, Result: v}, nil
	})
}
