package idem_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies keeps the boundary library small: it may import only the
// standard library, go-redis (and what go-redis needs) and the lua package.
// The services bring chi, amqp091 and pgx; the library must never.
func TestDependencies(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "github.com/oncepay/oncepay/pkg/idem").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 2 {
		t.Fatalf("go list found only %v; the check would prove nothing", deps)
	}
	for _, dep := range deps {
		for _, banned := range []string{"github.com/go-chi/", "github.com/rabbitmq/", "github.com/jackc/", "github.com/prometheus/"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("pkg/idem depends on %s; it may import only stdlib, go-redis and lua", dep)
			}
		}
		allowed := dep == "github.com/oncepay/oncepay/pkg/idem" || dep == "github.com/oncepay/oncepay/lua" ||
			strings.HasPrefix(dep, "github.com/redis/go-redis/") || strings.HasPrefix(dep, "github.com/cespare/xxhash") ||
			strings.HasPrefix(dep, "go.uber.org/atomic") || strings.HasPrefix(dep, "github.com/dgryski/go-rendezvous") ||
			strings.HasPrefix(dep, "golang.org/x/") || strings.HasPrefix(dep, "vendor/")
		if !allowed {
			t.Errorf("unexpected dependency %s", dep)
		}
	}
}
