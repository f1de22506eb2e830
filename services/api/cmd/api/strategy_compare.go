package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/naive"
	"github.com/oncepay/oncepay/services/api/internal/httpapi"
	"github.com/oncepay/oncepay/services/api/internal/payments"
	"github.com/redis/go-redis/v9"
)

// This file is the one place where a comparison strategy (IDEM_STRATEGY,
// package naive) replaces a part of the api. They exist to show, next to
// oncepay, how the common approaches fail under the same faults
// (docs/failure-windows.md, make compare); serve wires oncepay's boundary
// and calls comparison only when another strategy is configured.

// comparison returns the boundary and payment store of strategy s in place
// of oncepay's (real, pays):
//
//	get-then-set, setnx-marker, lock-then-check   that strategy in Redis
//	off                                           no boundary at all
//	no-backstop                                   the real boundary; payments without the unique-key backstop
//	api-only                                      the real boundary (only the worker differs)
func comparison(s naive.Strategy, real httpapi.Boundary, pays httpapi.PaymentStore, rdb *redis.Client, cfg idem.Config) (httpapi.Boundary, httpapi.PaymentStore) {
	switch s {
	case naive.StrategyGetThenSet:
		return naiveBoundary{naive.NewGetThenSet(rdb, cfg)}, pays
	case naive.StrategySetNXMarker:
		return naiveBoundary{naive.NewSetNXMarker(rdb, cfg)}, pays
	case naive.StrategyLockThenCheck:
		return naiveBoundary{naive.NewLockThenCheck(rdb, cfg, naive.DefaultLock)}, pays
	case naive.StrategyOff:
		return naiveBoundary{naive.NewTrusting(cfg)}, pays
	case naive.StrategyNoBackstop:
		return real, noBackstop{pays}
	}
	return real, pays
}

// naiveBoundary adapts a comparison strategy to httpapi.Boundary.
type naiveBoundary struct {
	s interface {
		Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (naive.Claim, error)
	}
}

func (b naiveBoundary) Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (httpapi.Claim, error) {
	c, err := b.s.Begin(ctx, k, stage, fingerprint)
	if c.Lease == nil {
		return httpapi.Claim{Outcome: c.Outcome, Result: c.Result}, err
	}
	return httpapi.Claim{Outcome: c.Outcome, Lease: c.Lease, Result: c.Result}, err
}

// noBackstop writes payments as a table without the UNIQUE (merchant_id,
// idempotency_key) constraint would take them: when the key already has a
// payment (Redis forgot the key, or another payload reuses it), it inserts
// a second payment instead of answering with the first. The shared schema
// keeps the constraint, so the second row (and its message) carries an
// alias of the key, naive.NoBackstopAlias; the worker of this strategy
// claims and charges it under the client's key again. The conflict that
// made the alias necessary still counts in payments_backstop_total.
type noBackstop struct{ httpapi.PaymentStore }

func (s noBackstop) Create(ctx context.Context, p payments.Payment, first payments.Response) (payments.Created, error) {
	c, err := s.PaymentStore.Create(ctx, p, first)
	if (err == nil && !c.Backstop) || (err != nil && !errors.Is(err, payments.ErrKeyReused)) {
		return c, err
	}
	p.IdempotencyKey = naive.NoBackstopAlias(p.IdempotencyKey, p.ID) // p.ID is fresh and was not inserted
	return s.PaymentStore.Create(ctx, p, first)
}

// warnLoudly logs s's warning at WARN now and every interval until ctx
// ends, so that nobody reads this api's logs without seeing it.
func warnLoudly(ctx context.Context, log *slog.Logger, s naive.Strategy, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		log.Warn(s.Warning(), "idem_strategy", string(s))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
