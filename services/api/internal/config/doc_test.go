package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncepay/oncepay/pkg/service/envconf"
	"github.com/oncepay/oncepay/pkg/service/envconf/envdoc"
)

// configurationDoc is the configuration reference, from this package.
var configurationDoc = filepath.Join("..", "..", "..", "..", "docs", "configuration.md")

// TestConfigurationDoc fails when docs/configuration.md and the code
// disagree: a variable read but not documented, documented but not read,
// or documented with another default. Each loader runs on an empty
// environment and its Parser's Vars are compared with the tables of its
// command; serve reads the shared Postgres pool timeouts too.
func TestConfigurationDoc(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(configurationDoc)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		command string
		load    func(*envconf.Parser)
		tables  []string
	}{
		{"api serve", func(p *envconf.Parser) { loadServe(p, "host-1") }, []string{"api serve", "Postgres pool timeouts"}},
		{"api migrate", func(p *envconf.Parser) { loadMigrate(p, "host-1") }, []string{"api migrate"}},
	} {
		p := envconf.New(func(string) string { return "" })
		tt.load(p)
		var rows []envdoc.Row
		for _, heading := range tt.tables {
			r, err := envdoc.Table(doc, heading)
			if err != nil {
				t.Fatalf("%s: %v", configurationDoc, err)
			}
			rows = append(rows, r...)
		}
		if diffs := envdoc.Compare(p.Vars(), rows); diffs != nil {
			t.Errorf("%s: the tables %q disagree with what %s reads; update the doc or the code:\n%s",
				configurationDoc, tt.tables, tt.command, strings.Join(diffs, "\n"))
		}
	}
}
