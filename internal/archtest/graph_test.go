package archtest

import (
	"slices"
	"strings"
	"testing"
)

// graph builds a Graph from "path name import..." lines; paths without a
// dot are taken relative to Module.
func graph(lines ...string) Graph {
	abs := func(p string) string {
		if strings.Contains(p, ".") {
			return p
		}
		return Module + "/" + p
	}
	g := Graph{}
	for _, l := range lines {
		f := strings.Fields(l)
		p := Package{ImportPath: abs(f[0]), Name: f[1]}
		for _, imp := range f[2:] {
			p.Imports = append(p.Imports, abs(imp))
		}
		g[p.ImportPath] = p
	}
	return g
}

func rule(t *testing.T, name string) Rule {
	t.Helper()
	i := slices.IndexFunc(Rules, func(r Rule) bool { return strings.HasPrefix(r.Name, name) })
	if i < 0 {
		t.Fatalf("no rule %q", name)
	}
	return Rules[i]
}

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rule  string
		graph Graph
		want  []string
	}{
		{
			rule: "the library",
			graph: graph("pkg/idem idem lua github.com/redis/go-redis/v9", "lua lua",
				"github.com/redis/go-redis/v9 redis"),
			want: nil,
		},
		{
			rule:  "the library",
			graph: graph("pkg/idem idem lua", "lua lua pkg/message", "pkg/message message"),
			want:  []string{"lua -> pkg/message", "pkg/idem -> lua -> pkg/message"},
		},
		{
			rule:  "shared packages",
			graph: graph("pkg/message message services/api/internal/outbox", "services/api/internal/outbox outbox"),
			want:  []string{"pkg/message -> services/api/internal/outbox"},
		},
		{
			rule: "a service",
			graph: graph("services/worker main services/worker/internal/charge",
				"services/worker/internal/charge charge services/psp/pspclient pkg/message",
				"services/psp/pspclient pspclient", "pkg/message message"),
			want: nil,
		},
		{
			rule: "a service",
			graph: graph("services/worker main services/worker/internal/charge",
				"services/worker/internal/charge charge services/api/internal/outbox",
				"services/api/internal/outbox outbox"),
			want: []string{
				"services/worker -> services/worker/internal/charge -> services/api/internal/outbox",
				"services/worker/internal/charge -> services/api/internal/outbox",
			},
		},
		{
			rule: "the product",
			graph: graph("services/psp/cmd/psp main services/psp/internal/psptest",
				"services/psp/internal/psptest psptest internal/testenv", "internal/testenv testenv"),
			want: []string{"services/psp/cmd/psp -> services/psp/internal/psptest"},
		},
		{
			rule:  "the product",
			graph: graph("pkg/service/ops ops loadtest/verify", "loadtest/verify verify"),
			want:  []string{"pkg/service/ops -> loadtest/verify"},
		},
		{
			rule: "production binaries",
			graph: graph("services/api/cmd/api main services/api/internal/config",
				"services/api/internal/config config pkg/idem/naive", "pkg/idem/naive naive"),
			want: []string{"services/api/cmd/api -> services/api/internal/config -> pkg/idem/naive"},
		},
	}
	for _, tt := range tests {
		got := tt.graph.Check(rule(t, tt.rule))
		if !slices.Equal(got, tt.want) {
			t.Errorf("rule %q: got %q, want %q", tt.rule, got, tt.want)
		}
	}
}
