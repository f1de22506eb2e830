//go:build compare

package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/naive"
	"github.com/redis/go-redis/v9"
)

// This file is the teaching build's wiring (go build -tags compare): the
// one place where a comparison strategy (IDEM_STRATEGY, package naive)
// replaces a part of the worker. They exist to show, next to oncepay, how
// the common approaches fail under the same faults
// (docs/failure-windows.md, make compare). The production build
// (strategy.go) wires oncepay's boundary only and does not link package
// naive.

// checkStrategy returns an error unless name (IDEM_STRATEGY) names a
// strategy (naive.ParseStrategy; empty is oncepay).
func checkStrategy(name string) error {
	_, err := naive.ParseStrategy(name)
	return err
}

// boundaryFor returns the charge stage's boundary of strategy name, with
// its psp key (naive.Boundary.PSPKey), in place of oncepay's
// (idem.New(rdb, cfg), the propagated key), and the readiness details that
// announce it; a strategy other than oncepay is also logged at WARN now
// and every minute until ctx ends. name has passed checkStrategy.
//
//	get-then-set, setnx-marker, lock-then-check   that strategy in Redis; a fresh psp key per attempt
//	the same with +key                            that strategy in Redis; the propagated psp key
//	api-only                                      no boundary, every delivery trusted; a fresh psp key per attempt
//	off                                           no boundary; the propagated psp key
//	no-backstop                                   the real boundary and key, under the client's key
//	                                              (a second payment the api stored under an alias
//	                                              is claimed and charged as the key it duplicates)
func boundaryFor(ctx context.Context, log *slog.Logger, name string, rdb redis.UniversalClient, cfg idem.Config) (*naive.Boundary, map[string]string) {
	s, _ := naive.ParseStrategy(name)
	var b *naive.Boundary
	switch s.Pattern() {
	case naive.StrategyOncepay:
		return naive.Real(idem.New(rdb, cfg)), nil
	case naive.StrategyGetThenSet:
		b = naive.Of(naive.NewGetThenSet(rdb, cfg), s.FreshPSPKey())
	case naive.StrategySetNXMarker:
		b = naive.Of(naive.NewSetNXMarker(rdb, cfg), s.FreshPSPKey())
	case naive.StrategyLockThenCheck:
		b = naive.Of(naive.NewLockThenCheck(rdb, cfg, naive.DefaultLock), s.FreshPSPKey())
	case naive.StrategyAPIOnly, naive.StrategyOff:
		b = naive.Of(naive.NewTrusting(cfg), s.FreshPSPKey())
	case naive.StrategyNoBackstop:
		b = naive.Unaliased(idem.New(rdb, cfg))
	}
	return b, s.Announce(ctx, log, time.Minute)
}
