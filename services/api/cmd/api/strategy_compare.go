//go:build compare

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

// This file is the teaching build's wiring (go build -tags compare): the
// one place where a comparison strategy (IDEM_STRATEGY, package naive)
// replaces a part of the api. They exist to show, next to oncepay, how the
// common approaches fail under the same faults (docs/failure-windows.md,
// make compare). The production build (strategy.go) wires oncepay's
// boundary only and does not link package naive.

// checkStrategy returns an error unless name (IDEM_STRATEGY) names a
// strategy (naive.ParseStrategy; empty is oncepay).
func checkStrategy(name string) error {
	_, err := naive.ParseStrategy(name)
	return err
}

// boundaryFor returns the boundary and payment store of strategy name in
// place of oncepay's (idem.New(rdb, cfg), pays), and the readiness details
// that announce it; a strategy other than oncepay is also logged at WARN
// now and every minute until ctx ends. name has passed checkStrategy.
//
//	get-then-set, setnx-marker, lock-then-check (+key)   that strategy in Redis
//	off                                                  no boundary at all
//	no-backstop                                          the real boundary; payments without the unique-key backstop
//	api-only                                             the real boundary (only the worker differs)
func boundaryFor(ctx context.Context, log *slog.Logger, name string, rdb redis.UniversalClient, cfg idem.Config, pays httpapi.PaymentStore) (httpapi.Boundary, httpapi.PaymentStore, map[string]string) {
	s, _ := naive.ParseStrategy(name)
	b := naive.Real(idem.New(rdb, cfg))
	switch s.Pattern() {
	case naive.StrategyOncepay:
		return b, pays, nil
	case naive.StrategyGetThenSet:
		b = naive.Of(naive.NewGetThenSet(rdb, cfg), false)
	case naive.StrategySetNXMarker:
		b = naive.Of(naive.NewSetNXMarker(rdb, cfg), false)
	case naive.StrategyLockThenCheck:
		b = naive.Of(naive.NewLockThenCheck(rdb, cfg, naive.DefaultLock), false)
	case naive.StrategyOff:
		b = naive.Of(naive.NewTrusting(cfg), false)
	case naive.StrategyNoBackstop:
		pays = noBackstop{pays}
	}
	return b, pays, s.Announce(ctx, log, time.Minute)
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
