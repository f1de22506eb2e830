package envdoc_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncepay/oncepay/pkg/service/envconf"
	"github.com/oncepay/oncepay/pkg/service/envconf/envdoc"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "configuration.md")
	if err := os.WriteFile(path, []byte(reference), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := []envconf.Var{
		{Name: "LISTEN_ADDR", Default: "127.0.0.1:8080"},
		{Name: "DATABASE_URL", Required: true},
		{Name: "MAX_HOLD", Default: "4 × LEASE"},
		{Name: "X_PPROF_ADDR"},
	}
	refs := []envdoc.Ref{{Heading: "svc"}, {Heading: "other", Prefix: "X_"}}
	if err := envdoc.Check(path, vars, refs...); err != nil {
		t.Errorf("Check of an agreeing doc = %v, want nil", err)
	}
	err := envdoc.Check(path, vars[:3], refs...)
	if err == nil || !strings.Contains(err.Error(), "X_PPROF_ADDR: documented (line 17) but not read by the code") {
		t.Errorf("Check without X_PPROF_ADDR = %v, want the difference named", err)
	}
	if err := envdoc.Check(path, vars, envdoc.Ref{Heading: "missing"}); err == nil {
		t.Error("Check of a missing table = nil, want an error")
	}
	if err := envdoc.Check(filepath.Join(t.TempDir(), "none.md"), vars, refs...); err == nil {
		t.Error("Check of a missing file = nil, want an error")
	}
}
