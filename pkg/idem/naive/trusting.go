package naive

import (
	"context"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
)

// Trusting is no boundary at all: every Begin acquires, Complete and
// Release do nothing, Redis is never called. It is the worker of the
// api-only strategy (trust every delivery) and both services with
// IDEM_STRATEGY=off. It is safe for concurrent use.
type Trusting struct{ cfg idem.Config }

// NewTrusting returns the strategy; only cfg.Observe is used.
func NewTrusting(cfg idem.Config) *Trusting { return &Trusting{cfg: defaults(cfg)} }

// Begin returns Acquired.
func (s *Trusting) Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (Claim, error) {
	start := time.Now()
	c := Claim{Outcome: idem.Acquired, Lease: &Lease{
		key: redisKey(k, stage), stage: stage, cfg: s.cfg,
		complete: func(context.Context, []byte) error { return nil }, release: nothing,
	}}
	report(s.cfg, idem.OpBegin, stage, start, c, nil)
	return c, nil
}
