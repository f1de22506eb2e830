package envdoc

import (
	"fmt"
	"os"
	"strings"

	"github.com/oncepay/oncepay/pkg/service/envconf"
)

// A Ref names a reference table and the prefix the service puts before
// each of its variables ("" for none), for a table that several services
// share under different prefixes.
type Ref struct {
	Heading, Prefix string
}

// Check reads the Markdown file at path, gathers the rows of the tables
// refs name (see Table) and compares vars with them (see Compare). It
// returns nil when they agree, an error naming the file and every
// difference when they do not, and an error when the file or a table
// cannot be read.
func Check(path string, vars []envconf.Var, refs ...Ref) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var rows []Row
	for _, ref := range refs {
		rs, err := Table(doc, ref.Heading)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for _, r := range rs {
			r.Name = ref.Prefix + r.Name
			rows = append(rows, r)
		}
	}
	if diffs := Compare(vars, rows); diffs != nil {
		return fmt.Errorf("%s disagrees with what the code reads; update the doc or the code:\n%s",
			path, strings.Join(diffs, "\n"))
	}
	return nil
}
