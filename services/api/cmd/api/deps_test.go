package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestProductionLinksNoTeachingCode: the api's production build (no build
// tags) does not link the comparison strategies; only the teaching build
// (-tags compare) does.
func TestProductionLinksNoTeachingCode(t *testing.T) {
	t.Parallel()
	const naive = "github.com/oncepay/oncepay/pkg/idem/naive"
	for _, tc := range []struct {
		tags string
		want bool
	}{{"", false}, {"compare", true}} {
		out, err := exec.Command("go", "list", "-tags", tc.tags, "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps: %v\n%s", err, out)
		}
		if got := strings.Contains("\n"+string(out), "\n"+naive+"\n"); got != tc.want {
			t.Errorf("go list -tags %q -deps: lists %s = %v, want %v", tc.tags, naive, got, tc.want)
		}
	}
}
