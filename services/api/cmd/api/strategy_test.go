//go:build !compare

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestProductionRefusesComparisonStrategies: the production build knows
// only oncepay's boundary; any other IDEM_STRATEGY stops the start with an
// error that names the teaching build, before anything is dialled.
func TestProductionRefusesComparisonStrategies(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"get-then-set", "off", "nonsense"} {
		env := map[string]string{
			"REDIS_URL": "redis://127.0.0.1:1/0", "DATABASE_URL": "postgres://u@127.0.0.1:1/db",
			"AMQP_URL": "amqp://127.0.0.1:1/", "API_MERCHANT_KEYS": "m=0123456789abcdef0123", "IDEM_STRATEGY": name,
		}
		err := run(context.Background(), []string{"api"}, func(k string) string { return env[k] }, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "teaching build") || !strings.Contains(err.Error(), name) {
			t.Errorf("IDEM_STRATEGY=%s: run() = %v, want an error naming the strategy and the teaching build", name, err)
		}
	}
}
