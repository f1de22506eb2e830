package config

import (
	"path/filepath"
	"testing"

	"github.com/oncepay/oncepay/pkg/service/envconf"
	"github.com/oncepay/oncepay/pkg/service/envconf/envdoc"
)

// configurationDoc is the configuration reference, from this package.
var configurationDoc = filepath.Join("..", "..", "..", "..", "docs", "configuration.md")

// TestConfigurationDoc fails when docs/configuration.md and the code
// disagree (see envdoc.Check). Each loader runs on an empty environment
// and its Parser's Vars are compared with the tables of its command; serve
// reads the shared Postgres pool timeouts too.
func TestConfigurationDoc(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		command string
		load    func(*envconf.Parser)
		tables  []envdoc.Ref
	}{
		{"api serve", func(p *envconf.Parser) { loadServe(p, "host-1") }, []envdoc.Ref{{Heading: "api serve"}, {Heading: "Postgres pool timeouts"}}},
		{"api migrate", func(p *envconf.Parser) { loadMigrate(p, "host-1") }, []envdoc.Ref{{Heading: "api migrate"}}},
	} {
		p := envconf.New(func(string) string { return "" })
		tt.load(p)
		if err := envdoc.Check(configurationDoc, p.Vars(), tt.tables...); err != nil {
			t.Errorf("%s: %v", tt.command, err)
		}
	}
}
