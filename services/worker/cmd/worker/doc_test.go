package main

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
// or documented with another default. load runs on an empty environment
// and its Parser's Vars are compared with the worker's table and the
// shared Postgres pool timeouts.
func TestConfigurationDoc(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(configurationDoc)
	if err != nil {
		t.Fatal(err)
	}
	p := envconf.New(func(string) string { return "" })
	load(p, "host-1")
	var rows []envdoc.Row
	for _, heading := range []string{"worker", "Postgres pool timeouts"} {
		r, err := envdoc.Table(doc, heading)
		if err != nil {
			t.Fatalf("%s: %v", configurationDoc, err)
		}
		rows = append(rows, r...)
	}
	if diffs := envdoc.Compare(p.Vars(), rows); diffs != nil {
		t.Errorf("%s disagrees with what the worker reads; update the doc or the code:\n%s",
			configurationDoc, strings.Join(diffs, "\n"))
	}
}
