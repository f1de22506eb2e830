//go:build !compare

package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/redis/go-redis/v9"
)

// This file wires oncepay's boundary. The teaching build (go build -tags
// compare, strategy_compare.go) wires the comparison strategies of
// IDEM_STRATEGY instead; this build does not link them.

// checkStrategy returns an error unless name (IDEM_STRATEGY) is empty or
// oncepay: the comparison strategies exist only in the teaching build.
func checkStrategy(name string) error {
	if name == "" || name == "oncepay" {
		return nil
	}
	return errors.New("the comparison strategies exist only in the teaching build " +
		"(go build -tags compare; make compare); this worker runs oncepay's boundary only")
}

// boundaryFor returns oncepay's boundary on rdb and no readiness details.
// name has passed checkStrategy.
func boundaryFor(_ context.Context, _ *slog.Logger, _ string, rdb redis.UniversalClient, cfg idem.Config) (*idem.Store, map[string]string) {
	return idem.New(rdb, cfg), nil
}
