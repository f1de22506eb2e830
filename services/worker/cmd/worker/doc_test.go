package main

import (
	"path/filepath"
	"testing"

	"github.com/oncepay/oncepay/pkg/service/envconf"
	"github.com/oncepay/oncepay/pkg/service/envconf/envdoc"
)

// configurationDoc is the configuration reference, from this package.
var configurationDoc = filepath.Join("..", "..", "..", "..", "docs", "configuration.md")

// TestConfigurationDoc fails when docs/configuration.md and the code
// disagree (see envdoc.Check). load runs on an empty environment and its
// Parser's Vars are compared with the worker's table and the shared
// Postgres pool timeouts.
func TestConfigurationDoc(t *testing.T) {
	t.Parallel()
	p := envconf.New(func(string) string { return "" })
	load(p, "host-1")
	if err := envdoc.Check(configurationDoc, p.Vars(),
		envdoc.Ref{Heading: "worker"}, envdoc.Ref{Heading: "Postgres pool timeouts"}); err != nil {
		t.Error(err)
	}
}
