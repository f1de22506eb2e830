package envdoc_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/pkg/service/envconf"
	"github.com/oncepay/oncepay/pkg/service/envconf/envdoc"
)

const reference = "# Configuration\n" +
	"\n" +
	"## svc\n" +
	"\n" +
	"Some prose.\n" +
	"\n" +
	"| variable | default | meaning |\n" +
	"|---|---|---|\n" +
	"| `LISTEN_ADDR` | `127.0.0.1:8080` | where it listens |\n" +
	"| `DATABASE_URL` | required | Postgres |\n" +
	"| `MAX_HOLD` | 4 × `LEASE` | a \\| b |\n" +
	"\n" +
	"## `other`\n" +
	"\n" +
	"| variable | default | meaning |\n" +
	"|---|---|---|\n" +
	"| `PPROF_ADDR` | unset | off unless set |\n"

func TestTable(t *testing.T) {
	t.Parallel()
	got, err := envdoc.Table([]byte(reference), "svc")
	if err != nil {
		t.Fatal(err)
	}
	want := []envdoc.Row{
		{Name: "LISTEN_ADDR", Default: "127.0.0.1:8080", Meaning: "where it listens", Line: 9},
		{Name: "DATABASE_URL", Default: "required", Meaning: "Postgres", Line: 10},
		{Name: "MAX_HOLD", Default: "4 × LEASE", Meaning: "a | b", Line: 11},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Table(svc) (-want +got):\n%s", diff)
	}
	got, err = envdoc.Table([]byte(reference), "other")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]envdoc.Row{{Name: "PPROF_ADDR", Default: "unset", Meaning: "off unless set", Line: 17}}, got); diff != "" {
		t.Errorf("Table(other) (-want +got):\n%s", diff)
	}
}

func TestTableErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, markdown, heading string }{
		{"no heading", reference, "missing"},
		{"no table before the next heading", "## a\n\ntext\n\n## b\n\n| x | y | z |\n|---|---|---|\n", "a"},
		{"no table at all", "## a\n\ntext\n", "a"},
		{"a row of two cells", "## a\n\n| x | y | z |\n|---|---|---|\n| `A` | `1` |\n", "a"},
	} {
		if rows, err := envdoc.Table([]byte(tt.markdown), tt.heading); err == nil {
			t.Errorf("%s: Table = %v, nil; want an error", tt.name, rows)
		}
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	vars := []envconf.Var{
		{Name: "LISTEN_ADDR", Default: "127.0.0.1:8080"},
		{Name: "DATABASE_URL", Required: true},
		{Name: "LEASE", Default: "10s"},
		{Name: "PPROF_ADDR"},
		{Name: "NEW_ONE", Default: "5m"},
	}
	rows := []envdoc.Row{
		{Name: "LISTEN_ADDR", Default: "127.0.0.1:8080", Meaning: "where", Line: 1},
		{Name: "DATABASE_URL", Default: "required", Meaning: "", Line: 2},
		{Name: "LEASE", Default: "15s", Meaning: "lease", Line: 3},
		{Name: "PPROF_ADDR", Default: "unset", Meaning: "pprof", Line: 4},
		{Name: "GONE", Default: "1s", Meaning: "removed from the code", Line: 5},
		{Name: "LISTEN_ADDR", Default: "127.0.0.1:8080", Meaning: "again", Line: 6},
	}
	want := []string{
		"DATABASE_URL: no meaning (line 2)",
		"GONE: documented (line 5) but not read by the code",
		`LEASE: documented default "15s" (line 3), the code's is "10s"`,
		"LISTEN_ADDR: two rows (lines 1 and 6)",
		"NEW_ONE: read by the code (default 5m) but not documented",
	}
	if diff := cmp.Diff(want, envdoc.Compare(vars, rows)); diff != "" {
		t.Errorf("Compare (-want +got):\n%s", diff)
	}
	agreeing := []envdoc.Row{
		{Name: "PPROF_ADDR", Default: "unset", Meaning: "pprof"},
		{Name: "DATABASE_URL", Default: "required", Meaning: "Postgres"},
		{Name: "LISTEN_ADDR", Default: "127.0.0.1:8080", Meaning: "where"},
	}
	if got := envdoc.Compare([]envconf.Var{vars[0], vars[1], vars[3]}, agreeing); got != nil {
		t.Errorf("Compare of agreeing lists in another order = %q, want nil", got)
	}
}
