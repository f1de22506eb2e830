package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/naive"
	"github.com/redis/go-redis/v9"

	"github.com/oncepay/oncepay/services/worker/internal/charge"
)

// This file is the one place where a comparison strategy (IDEM_STRATEGY,
// package naive) replaces a part of the worker. They exist to show, next
// to oncepay, how the common approaches fail under the same faults
// (docs/failure-windows.md, make compare); run wires oncepay's boundary and
// calls comparison only when another strategy is configured.

// comparison returns the charge stage's boundary and the psp key function
// of strategy s in place of oncepay's (real, and the propagated key):
//
//	get-then-set, setnx-marker, lock-then-check   that strategy in Redis; a fresh psp key per attempt
//	api-only                                      no boundary, every delivery trusted; a fresh psp key per attempt
//	off                                           no boundary; the propagated psp key
//	no-backstop                                   the real boundary and key, under the client's key
//	                                              (a second payment the api stored under an alias
//	                                              is claimed and charged as the key it duplicates)
//
// A fresh key per attempt is what a worker does when nobody designed key
// propagation: it makes the psp's own idempotency useless, so a retry after
// a lost psp answer charges again.
func comparison(s naive.Strategy, real charge.Boundary, rdb *redis.Client, cfg idem.Config) (charge.Boundary, func(charge.Initiated) string) {
	switch s {
	case naive.StrategyGetThenSet:
		return naiveBoundary{naive.NewGetThenSet(rdb, cfg)}, freshPSPKey
	case naive.StrategySetNXMarker:
		return naiveBoundary{naive.NewSetNXMarker(rdb, cfg)}, freshPSPKey
	case naive.StrategyLockThenCheck:
		return naiveBoundary{naive.NewLockThenCheck(rdb, cfg, naive.DefaultLock)}, freshPSPKey
	case naive.StrategyAPIOnly:
		return naiveBoundary{naive.NewTrusting(cfg)}, freshPSPKey
	case naive.StrategyOff:
		return naiveBoundary{naive.NewTrusting(cfg)}, charge.PSPKey
	case naive.StrategyNoBackstop:
		return unaliased{real}, func(m charge.Initiated) string {
			return m.MerchantID + ":" + naive.NoBackstopKey(m.IdempotencyKey)
		}
	}
	return real, charge.PSPKey
}

// unaliased claims a payment that no-backstop's api stored under an alias
// (naive.NoBackstopAlias) under the client's key, where a system without
// the unique constraint would have it.
type unaliased struct{ b charge.Boundary }

func (u unaliased) Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (charge.Claim, error) {
	if key, err := idem.NewKey(k.Merchant(), naive.NoBackstopKey(k.ID())); err == nil {
		k = key
	}
	return u.b.Begin(ctx, k, stage, fingerprint)
}

// freshPSPKey is a new psp Idempotency-Key for every attempt:
// <merchant_id>:<idempotency_key>:attempt-<random>.
func freshPSPKey(m charge.Initiated) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return charge.PSPKey(m) + ":attempt-" + hex.EncodeToString(b[:])
}

// naiveBoundary adapts a comparison strategy to charge.Boundary.
type naiveBoundary struct {
	s interface {
		Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (naive.Claim, error)
	}
}

func (b naiveBoundary) Begin(ctx context.Context, k idem.Key, stage, fingerprint string) (charge.Claim, error) {
	c, err := b.s.Begin(ctx, k, stage, fingerprint)
	out := charge.Claim{Outcome: c.Outcome, Result: c.Result}
	if c.Lease != nil {
		out.Lease = c.Lease
	}
	return out, err
}

// warnLoudly logs s's warning at WARN now and every interval until ctx
// ends, so that nobody reads this worker's logs without seeing it.
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
