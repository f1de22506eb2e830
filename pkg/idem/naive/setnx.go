package naive

import (
	"context"
	"errors"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/redis/go-redis/v9"
)

// SetNXMarker claims the key with SET NX, overwrites the marker with the
// result and deletes it on error.
//
//	SET key "in-progress" NX EX retention  -> set: run
//	                                       -> taken: GET key; the marker is
//	                                          "in progress", anything else
//	                                          is the result to replay
//	SET key result EX retention             after the work
//	DEL key                                 after an error
//
// The marker is one value with no owner and no lease: a live owner's marker
// cannot be told from a crashed one's, so a crash mid-work blocks the key
// until the retention ends, and a delete (a stale owner's late error path)
// removes whatever the key holds, even a newer owner's marker. It is safe
// for concurrent use.
type SetNXMarker struct {
	rdb Commands
	cfg idem.Config
}

// NewSetNXMarker returns the strategy on rdb. cfg.Retention is the TTL of
// both the marker and the result; cfg.Timeout bounds every Redis call,
// cfg.Observe (optional) sees every operation; zero fields take idem's
// defaults.
func NewSetNXMarker(rdb Commands, cfg idem.Config) *SetNXMarker {
	return &SetNXMarker{rdb: rdb, cfg: defaults(cfg)}
}

// Begin claims stage of k: Acquired when the SET NX wins, an
// *idem.InProgressError while a marker is there (whoever left it),
// Completed with the stored result otherwise. The fingerprint is ignored.
// Redis errors wrap idem.ErrUnavailable.
func (s *SetNXMarker) Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (Claim, error) {
	return timedBegin(ctx, s.cfg, k, stage, func(ctx context.Context, key string) (Claim, error) {
		return s.begin(ctx, key, stage)
	})
}

func (s *SetNXMarker) begin(ctx context.Context, key, stage string) (Claim, error) {
	won, err := s.rdb.SetNX(ctx, key, Marker, s.cfg.Retention).Result()
	if err != nil {
		return Claim{}, unavailable(idem.OpBegin, key, err)
	}
	if won {
		return Claim{Outcome: idem.Acquired, Lease: &Lease{
			key: key, stage: stage, cfg: s.cfg,
			complete: storeResult(s.rdb, key, s.cfg.Retention), release: deleteKey(s.rdb, key),
		}}, nil
	}
	v, err := s.rdb.Get(ctx, key).Bytes()
	switch {
	case errors.Is(err, redis.Nil): // deleted since the SET NX: someone's error path
		return Claim{}, inProgress()
	case err != nil:
		return Claim{}, unavailable(idem.OpBegin, key, err)
	case string(v) == Marker:
		return Claim{}, inProgress()
	}
	return Claim{Outcome: idem.Completed, Result: v}, nil
}
