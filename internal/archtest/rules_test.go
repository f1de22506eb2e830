package archtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// workspace returns the directory of go.work, where the go commands run.
func workspace(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOWORK").Output()
	if err != nil {
		t.Fatalf("go env GOWORK: %v", err)
	}
	work := strings.TrimSpace(string(out))
	if work == "" || work == "off" {
		t.Fatalf("go env GOWORK = %q: run the test inside the repository's workspace (go.work)", work)
	}
	return filepath.Dir(work)
}

// goCmd runs go with args in dir and returns its stdout.
func goCmd(t *testing.T, dir string, env []string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// TestDependencyRules checks every rule of Rules over the non-test
// packages of every workspace module.
func TestDependencyRules(t *testing.T) {
	root := workspace(t)
	out := goCmd(t, root, nil, "list", "-deps", "-json=ImportPath,Name,Imports,Standard,DepOnly", Module+"/...")
	g, err := ReadGraph(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(g.Roots(IsProduct)); n < 20 {
		t.Fatalf("go list found %d product packages; the check would prove nothing", n)
	}
	for _, r := range Rules {
		t.Run(r.Name, func(t *testing.T) {
			if len(g.Roots(r.Root)) == 0 {
				t.Fatal("the rule applies to no package; the check would prove nothing")
			}
			for _, chain := range g.Check(r) {
				t.Errorf("%s", chain)
			}
		})
	}
}

// libraryModules are the modules that library users require: the root
// module, which holds lua, pkg/idem and the test harness the library's
// tests use (internal/redistest, internal/proc) as packages, not modules.
var libraryModules = []string{"."}

// forbiddenInLibraryGraph are module paths that must not appear in a
// library module's own graph (GOWORK=off go mod graph): what a library
// user would inherit.
var forbiddenInLibraryGraph = []string{
	"github.com/jackc/pgx",
	"github.com/rabbitmq/amqp091-go",
	"github.com/go-chi/",
	"github.com/prometheus/",
	Module + "/", // any other module of this repository: a service, the rig
}

// TestLibraryModuleGraph checks that a user of the library inherits no
// database or broker driver, no HTTP router, no metrics client and no
// service or test-rig module, through the library's go.mod.
func TestLibraryModuleGraph(t *testing.T) {
	root := workspace(t)
	for _, mod := range libraryModules {
		t.Run(mod, func(t *testing.T) {
			out := goCmd(t, filepath.Join(root, mod), []string{"GOWORK=off"}, "mod", "graph")
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				from, to, _ := strings.Cut(line, " ")
				for _, bad := range forbiddenInLibraryGraph {
					if strings.HasPrefix(to, bad) {
						t.Errorf("%s's module graph names %s (required by %s)", mod, to, from)
					}
				}
			}
		})
	}
}

// teachingBinaries are the binaries that have a teaching build (-tags
// compare); rule 5 checks that their production build links no teaching
// strategy.
var teachingBinaries = []string{
	Module + "/services/api/cmd/api",
	Module + "/services/worker/cmd/worker",
}

// TestTeachingBuildLinksStrategies checks the other half of rule 5: the
// teaching build of each teachingBinaries entry does link pkg/idem/naive,
// so the production check is not vacuous.
func TestTeachingBuildLinksStrategies(t *testing.T) {
	root := workspace(t)
	args := append([]string{"list", "-tags", "compare", "-deps", "-json=ImportPath,Name,Imports,Standard,DepOnly"}, teachingBinaries...)
	g, err := ReadGraph(bytes.NewReader(goCmd(t, root, nil, args...)))
	if err != nil {
		t.Fatal(err)
	}
	for _, bin := range teachingBinaries {
		if _, ok := g[bin]; !ok {
			t.Errorf("go list -tags compare did not list %s", bin)
			continue
		}
		if g.Chain(bin, IsTeaching) == "" {
			t.Errorf("%s built with -tags compare links no package of pkg/idem/naive", bin)
		}
	}
}
