package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/oncepay/oncepay/pkg/service/envconf"
	"github.com/oncepay/oncepay/pkg/service/envconf/envdoc"
)

// configurationDoc is the configuration reference, from this package.
var configurationDoc = filepath.Join("..", "..", "..", "..", "docs", "configuration.md")

// TestConfigurationDoc fails when docs/configuration.md and the code
// disagree (see envdoc.Check). load runs on an empty environment and its
// Parser's Vars are compared with the psp's table and the shared Postgres
// pool timeouts, which the psp reads with the prefix PSP_.
func TestConfigurationDoc(t *testing.T) {
	t.Parallel()
	p := envconf.New(func(string) string { return "" })
	load(p, time.Now())
	if err := envdoc.Check(configurationDoc, p.Vars(),
		envdoc.Ref{Heading: "psp"}, envdoc.Ref{Heading: "Postgres pool timeouts", Prefix: "PSP_"}); err != nil {
		t.Error(err)
	}
}
