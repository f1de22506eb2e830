package naive_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/oncepay/oncepay/pkg/idem/naive"
)

func TestParseStrategy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want naive.Strategy
		err  bool
	}{
		{"", naive.StrategyOncepay, false},
		{"oncepay", naive.StrategyOncepay, false},
		{"get-then-set", naive.StrategyGetThenSet, false},
		{"setnx-marker", naive.StrategySetNXMarker, false},
		{"lock-then-check", naive.StrategyLockThenCheck, false},
		{"api-only", naive.StrategyAPIOnly, false},
		{"no-backstop", naive.StrategyNoBackstop, false},
		{"off", naive.StrategyOff, false},
		{"get-then-set+key", naive.StrategyGetThenSetKey, false},
		{"setnx-marker+key", naive.StrategySetNXMarkerKey, false},
		{"lock-then-check+key", naive.StrategyLockThenCheckKey, false},
		{"off+key", "", true},
		{"Off", "", true},
		{"getthenset", "", true},
	}
	for _, tt := range tests {
		got, err := naive.ParseStrategy(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseStrategy(%q) = %q, %v; want %q (error %v)", tt.in, got, err, tt.want, tt.err)
		}
		if err != nil && !strings.Contains(err.Error(), "get-then-set") {
			t.Errorf("error %q does not list the valid names", err)
		}
	}
}

func TestWarning(t *testing.T) {
	t.Parallel()
	for _, s := range naive.Strategies() {
		w := s.Warning()
		switch {
		case s.Real() && w != "":
			t.Errorf("%s: warning %q, want none for the real boundary", s, w)
		case !s.Real() && !strings.Contains(w, "DEMONSTRATION") || !s.Real() && !strings.Contains(w, string(s)):
			t.Errorf("%s: warning %q does not say loudly what it is", s, w)
		}
	}
}

// TestDependencies: like pkg/idem, the comparison strategies import only
// the standard library, go-redis, pkg/idem and lua.
func TestDependencies(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "github.com/oncepay/oncepay/pkg/idem/naive").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		allowed := strings.HasPrefix(dep, "github.com/oncepay/oncepay/pkg/idem") || dep == "github.com/oncepay/oncepay/lua" ||
			strings.HasPrefix(dep, "github.com/redis/go-redis/") || strings.HasPrefix(dep, "github.com/cespare/xxhash") ||
			strings.HasPrefix(dep, "go.uber.org/atomic") || strings.HasPrefix(dep, "github.com/dgryski/go-rendezvous") ||
			strings.HasPrefix(dep, "golang.org/x/") || strings.HasPrefix(dep, "vendor/")
		if !allowed {
			t.Errorf("pkg/idem/naive depends on %s; it may import only stdlib, go-redis, pkg/idem and lua", dep)
		}
	}
}

// TestKeyAxis: a +key strategy is its pattern with the propagated psp
// key; only the fresh-key strategies send the psp a key per attempt.
func TestKeyAxis(t *testing.T) {
	t.Parallel()
	fresh := map[naive.Strategy]bool{naive.StrategyGetThenSet: true, naive.StrategySetNXMarker: true,
		naive.StrategyLockThenCheck: true, naive.StrategyAPIOnly: true}
	for _, s := range naive.Strategies() {
		if got := s.FreshPSPKey(); got != fresh[s] {
			t.Errorf("%s.FreshPSPKey() = %v, want %v", s, got, fresh[s])
		}
		if p := s.Pattern(); strings.HasSuffix(string(s), "+key") && (p == s || !p.FreshPSPKey()) {
			t.Errorf("%s.Pattern() = %s, want its fresh-key pattern", s, p)
		}
	}
}

func TestNoBackstopAlias(t *testing.T) {
	t.Parallel()
	alias := naive.NoBackstopAlias("order-7", "pay_abcdefghijklmnopqrstuvwxyz")
	if alias != "order-7~dup-stuvwxyz" {
		t.Errorf("alias = %q", alias)
	}
	for in, want := range map[string]string{alias: "order-7", "order-7": "order-7", "~dup-x": "~dup-x"} {
		if got := naive.NoBackstopKey(in); got != want {
			t.Errorf("NoBackstopKey(%q) = %q, want %q", in, got, want)
		}
	}
}
