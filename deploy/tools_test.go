package deploy_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

const toolsHint = "run `make tools` (installs the pinned helm v3.22.0 into bin/) or set HELM=/path/to/helm"

// repoRoot is the repository root: the tests run in deploy/.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Fatalf("repository root %s has no go.work: %v", root, err)
	}
	return root
}

// trackInputs reads every file under path (relative to the repository
// root). Files that only a subprocess (helm) reads are invisible to the go
// test cache; reading them here makes a changed chart invalidate a cached
// result. The cache ignores files outside this module (docker-compose.yml,
// services/), so run these tests with -count=1, as `make test` does.
func trackInputs(t testing.TB, path string) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join(repoRoot(t), path), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		_, err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatalf("read inputs: %v", err)
	}
}

// helmBin finds helm: $HELM, then bin/helm (make tools), then PATH. A
// missing helm fails the test; it never skips.
func helmBin(t testing.TB) string {
	t.Helper()
	return toolBin(t, "helm", "HELM", toolsHint)
}

// promtoolBin finds promtool the same way: $PROMTOOL, bin/promtool, PATH.
func promtoolBin(t testing.TB) string {
	t.Helper()
	return toolBin(t, "promtool", "PROMTOOL",
		"run `make tools` (unpacks promtool from Debian's prometheus package into bin/) or set PROMTOOL=/path/to/promtool")
}

// toolBin finds the tool name: $env, then bin/name (make tools), then PATH,
// and fails the test with hint when none has it.
func toolBin(t testing.TB, name, env, hint string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	// isExecutable stats the binary, so a new one invalidates cached results
	if p := filepath.Join(repoRoot(t), "bin", name); isExecutable(p) {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	t.Fatalf("%s not found: %s", name, hint)
	return ""
}

// composeCommand returns the Compose CLI as argv: `docker compose` (v2) when
// it answers, else `docker-compose` (v1.29), else nil.
func composeCommand() []string {
	composeOnce.Do(func() {
		if err := exec.Command("docker", "compose", "version").Run(); err == nil {
			composeArgv = []string{"docker", "compose"}
			return
		}
		if p, err := exec.LookPath("docker-compose"); err == nil {
			composeArgv = []string{p}
		}
	})
	return composeArgv
}

var (
	composeOnce sync.Once
	composeArgv []string
)

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// run runs argv in dir and returns stdout; stderr goes into the error.
func run(t testing.TB, dir string, argv ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &cmdError{argv: argv, err: err, stderr: stderr.String()}
	}
	return stdout.Bytes(), nil
}

type cmdError struct {
	argv   []string
	err    error
	stderr string
}

func (e *cmdError) Error() string {
	return strings.Join(e.argv, " ") + ": " + e.err.Error() + "\n" + e.stderr
}

var envLiteral = regexp.MustCompile(`"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)"`)

// serviceEnvNames returns every "UPPER_CASE" string literal in the non-test
// Go files of services/<svc> and pkg/service/trace: a superset of the environment variables the
// service reads. Deployment files must only set names from this set.
func serviceEnvNames(t testing.TB, svc string) map[string]bool {
	t.Helper()
	envNamesOnce.Do(func() { envNames = map[string]map[string]bool{} })
	envNamesMu.Lock()
	defer envNamesMu.Unlock()
	if m, ok := envNames[svc]; ok {
		return m
	}
	dir := filepath.Join(repoRoot(t), "services", svc)
	m := map[string]bool{}
	if err := walkEnvNames(dir, m); err != nil {
		t.Fatalf("scan %s: %v", dir, err)
	}
	if len(m) == 0 {
		t.Fatalf("no environment variable names found in %s", dir)
	}
	// the OTEL_* variables every service reads through pkg/service/trace
	shared := filepath.Join(repoRoot(t), "pkg", "service", "trace")
	if err := walkEnvNames(shared, m); err != nil {
		t.Fatalf("scan %s: %v", shared, err)
	}
	envNames[svc] = m
	return m
}

// walkEnvNames adds the environment variable names the non-test Go files
// under dir mention to m.
func walkEnvNames(dir string, m map[string]bool) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, sm := range envLiteral.FindAllSubmatch(b, -1) {
			m[string(sm[1])] = true
		}
		return nil
	})
}

var (
	envNamesOnce sync.Once
	envNamesMu   sync.Mutex
	envNames     map[string]map[string]bool
)

// TestToolsPreferPinnedToolsOnPath runs deploy/tools on a PATH without go or
// a network tool: a helm, kind and kubectl of the pinned versions there are
// used as they are (an air-gapped machine), a kind of another version is
// refused by name, and $KUBECTL is honoured unchecked.
func TestToolsPreferPinnedToolsOnPath(t *testing.T) {
	fakes := t.TempDir()
	fake := func(dir, name, out string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+out+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	helm := fake(fakes, "helm", "v3.22.0+g1a2b3c4")
	kind := fake(fakes, "kind", "kind v0.33.0 go1.26.8 linux/amd64")
	kubectl := fake(fakes, "kubectl", "Client Version: v1.33.13")
	tools := filepath.Join(repoRoot(t), "deploy", "tools")

	runTools := func(env []string, args ...string) (stdout, stderr string, err error) {
		t.Helper()
		cmd := exec.Command(tools, args...)
		cmd.Env = append([]string{"PATH=" + fakes + ":/usr/bin:/bin"}, env...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err = cmd.Run()
		return o.String(), e.String(), err
	}

	out, errOut, err := runTools(nil, "helm", "kind", "kubectl")
	if err != nil {
		t.Fatalf("deploy/tools helm kind kubectl: %v\n%s", err, errOut)
	}
	if got, want := strings.Fields(out), []string{helm, kind, kubectl}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("paths printed = %q, want %q", got, want)
	}
	for _, want := range []string{"using helm v3.22.0 from PATH", "using kind v0.33.0 from PATH", "using kubectl v1.33.13 from PATH"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not say %q:\n%s", want, errOut)
		}
	}

	// a dispatcher or another release is not the pinned tool: refused, and
	// with no go on PATH the install fails instead of using it
	other := t.TempDir()
	fake(other, "kubectl", "Client Version: v1.32.4-dispatcher")
	fakes = other
	_, errOut, err = runTools([]string{"KUBECTL=" + kubectl}, "kubectl")
	if err != nil || !strings.Contains(errOut, "using kubectl from $KUBECTL") {
		t.Errorf("with $KUBECTL set: err %v, stderr:\n%s", err, errOut)
	}
	fake(other, "kind", "kind v0.31.0 go1.25 linux/amd64")
	_, errOut, err = runTools(nil, "kind")
	if err == nil {
		t.Fatalf("deploy/tools kind with only kind v0.31.0 on PATH and no go: succeeded\n%s", errOut)
	}
	if !strings.Contains(errOut, "is kind v0.31.0, not the pinned v0.33.0: not used") {
		t.Errorf("stderr does not name the refused kind:\n%s", errOut)
	}
}
