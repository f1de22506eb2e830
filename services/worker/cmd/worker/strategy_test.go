//go:build !compare

package main

import (
	"strings"
	"testing"
)

// TestProductionRefusesComparisonStrategies: the production build knows
// only oncepay's boundary; any other IDEM_STRATEGY is a configuration
// problem that names the teaching build.
func TestProductionRefusesComparisonStrategies(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"get-then-set", "off", "nonsense"} {
		env := required()
		env["IDEM_STRATEGY"] = name
		_, err := loadConfig(envOf(env), "host")
		if err == nil || !strings.Contains(err.Error(), "teaching build") || !strings.Contains(err.Error(), name) {
			t.Errorf("IDEM_STRATEGY=%s: loadConfig = %v, want a problem naming the strategy and the teaching build", name, err)
		}
	}
	if _, err := loadConfig(envOf(required()), "host"); err != nil {
		t.Errorf("without IDEM_STRATEGY: %v", err)
	}
}
