package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// composeFile is the part of the Compose specification this test looks at.
// Decoding is not strict: the spec has many more fields.
type composeFile struct {
	Services map[string]composeService `json:"services"`
	Volumes  map[string]any            `json:"volumes"`
}

type composeService struct {
	Image           string                       `json:"image"`
	Hostname        string                       `json:"hostname"`
	Command         []string                     `json:"command"`
	Profiles        []string                     `json:"profiles"`
	Restart         string                       `json:"restart"`
	ReadOnly        bool                         `json:"read_only"`
	User            string                       `json:"user"`
	CapDrop         []string                     `json:"cap_drop"`
	SecurityOpt     []string                     `json:"security_opt"`
	MemLimit        string                       `json:"mem_limit"`
	Environment     map[string]string            `json:"environment"`
	Ports           []string                     `json:"ports"`
	Volumes         []string                     `json:"volumes"`
	Tmpfs           []string                     `json:"tmpfs"`
	Healthcheck     *composeHealthcheck          `json:"healthcheck"`
	DependsOn       map[string]composeDependency `json:"-"`
	RawDependsOn    any                          `json:"depends_on"`
	StopGracePeriod string                       `json:"stop_grace_period"`
	DNSOpt          []string                     `json:"dns_opt"`
}

type composeHealthcheck struct {
	Test []string `json:"test"`
}

type composeDependency struct {
	Condition string `json:"condition"`
}

var interpolation = regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}`)

// interpolate applies Compose variable substitution with an empty
// environment: every ${VAR:-default} becomes its default. It also returns
// the variables and their defaults.
func interpolate(s string) (string, map[string]string) {
	vars := map[string]string{}
	out := interpolation.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		sm := interpolation.FindStringSubmatch(m)
		vars[sm[1]] = sm[2]
		return sm[2]
	})
	return out, vars
}

// loadCompose parses docker-compose.yml as Compose would with no .env file.
func loadCompose(t *testing.T) (composeFile, map[string]string) {
	t.Helper()
	return loadComposeFile(t, "docker-compose.yml")
}

// loadComposeFile parses one Compose file of the repository root, alone.
func loadComposeFile(t *testing.T, name string) (composeFile, map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), name))
	if err != nil {
		t.Fatal(err)
	}
	text, vars := interpolate(string(raw))
	var cf composeFile
	// YAML anchors and merge keys (<<) are resolved by the YAML decoder
	if err := yaml.Unmarshal([]byte(text), &cf); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for name, svc := range cf.Services {
		svc.DependsOn = map[string]composeDependency{}
		switch d := svc.RawDependsOn.(type) {
		case []any: // short form: condition service_started
			for _, n := range d {
				svc.DependsOn[n.(string)] = composeDependency{Condition: "service_started"}
			}
		case map[string]any:
			b, _ := yaml.Marshal(d)
			if err := yaml.Unmarshal(b, &svc.DependsOn); err != nil {
				t.Fatalf("service %s: depends_on: %v", name, err)
			}
		}
		cf.Services[name] = svc
	}
	return cf, vars
}

// TestComposeConfig validates the file with the Compose binary when there
// is one (docker compose v2 or docker-compose v1.29); the Go checks below
// run either way.
func TestComposeConfig(t *testing.T) {
	t.Parallel()
	trackInputs(t, "docker-compose.yml")
	argv := composeCommand()
	if argv == nil {
		t.Log("no docker compose / docker-compose binary: only the Go checks of TestCompose* ran")
		return
	}
	root := repoRoot(t)
	for _, profile := range [][]string{nil, {"--profile", "observability"}} {
		args := append(slices.Clone(argv), "-p", "oncepay-test", "-f", filepath.Join(root, "docker-compose.yml"), "--project-directory", root)
		args = append(append(args, profile...), "config", "-q")
		if out, err := run(t, root, args...); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

var (
	coreServices  = []string{"redis", "postgres", "rabbitmq", "migrate", "psp", "api-1", "api-2", "worker-1", "worker-2"}
	observability = []string{"prometheus", "grafana", "jaeger"}
)

func TestComposeServices(t *testing.T) {
	t.Parallel()
	cf, _ := loadCompose(t)
	var names []string
	for n := range cf.Services {
		names = append(names, n)
	}
	want := append(slices.Clone(coreServices), observability...)
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("services = %v, want %v", names, want)
	}
	for name, svc := range cf.Services {
		inCore := slices.Contains(coreServices, name)
		if inCore == slices.Contains(svc.Profiles, "observability") {
			t.Errorf("%s: profiles %v: the core services have none, prometheus, grafana and jaeger are in observability", name, svc.Profiles)
		}
		if _, tag, ok := strings.Cut(svc.Image[strings.LastIndex(svc.Image, "/")+1:], ":"); !ok || tag == "" || tag == "latest" {
			t.Errorf("%s: image %q needs an explicit tag other than latest", name, svc.Image)
		}
		if !svc.ReadOnly {
			t.Errorf("%s: read_only is not true", name)
		}
		if u := strings.Split(svc.User, ":")[0]; u == "" || u == "0" || u == "root" {
			t.Errorf("%s: user %q: every container runs as a non-root uid", name, svc.User)
		}
		if !slices.Contains(svc.CapDrop, "ALL") {
			t.Errorf("%s: cap_drop does not drop ALL", name)
		}
		if !slices.Contains(svc.SecurityOpt, "no-new-privileges:true") {
			t.Errorf("%s: no security_opt no-new-privileges:true", name)
		}
		if svc.MemLimit == "" {
			t.Errorf("%s: no mem_limit", name)
		}
		for _, p := range svc.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s: port %q is published beyond localhost", name, p)
			}
		}
		for dep, d := range svc.DependsOn {
			if _, ok := cf.Services[dep]; !ok {
				t.Errorf("%s: depends on unknown service %s", name, dep)
			}
			switch {
			case dep == "migrate" && d.Condition != "service_completed_successfully":
				t.Errorf("%s: depends on migrate with %q, want service_completed_successfully", name, d.Condition)
			case dep != "migrate" && inCore && d.Condition != "service_healthy":
				t.Errorf("%s: depends on %s with %q, want service_healthy", name, dep, d.Condition)
			}
			if dd := cf.Services[dep]; d.Condition == "service_healthy" && dd.Healthcheck == nil {
				t.Errorf("%s: waits for %s to be healthy, which has no healthcheck", name, dep)
			}
		}
		// long-running core services are healthchecked; the one-shot is not restarted
		switch {
		case name == "migrate":
			if svc.Restart != "no" {
				t.Errorf("migrate: restart %q, want \"no\" (one-shot)", svc.Restart)
			}
		case inCore:
			if svc.Healthcheck == nil || len(svc.Healthcheck.Test) < 2 || svc.Healthcheck.Test[0] != "CMD" {
				t.Errorf("%s: want an exec-form healthcheck, got %+v", name, svc.Healthcheck)
			}
		}
		for _, v := range svc.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, ".") {
				if _, err := os.Stat(filepath.Join(repoRoot(t), src)); err != nil {
					t.Errorf("%s: bind mount source %s: %v", name, src, err)
				}
			} else if _, ok := cf.Volumes[src]; !ok {
				t.Errorf("%s: named volume %s is not declared", name, src)
			}
		}
	}
	// the oncepay containers: distroless uid, /probe health checks, two replicas
	for _, name := range []string{"api-1", "api-2", "worker-1", "worker-2", "psp", "migrate"} {
		svc := cf.Services[name]
		if svc.User != "65532:65532" {
			t.Errorf("%s: user %q, want 65532:65532 (distroless nonroot)", name, svc.User)
		}
		if svc.Healthcheck != nil && svc.Healthcheck.Test[1] != "/probe" {
			t.Errorf("%s: healthcheck %v, want /probe (distroless has no shell or curl)", name, svc.Healthcheck.Test)
		}
		if !slices.ContainsFunc(svc.Tmpfs, func(s string) bool { return strings.HasPrefix(s, "/tmp") }) {
			t.Errorf("%s: read-only without a tmpfs /tmp", name)
		}
	}
	if cf.Services["api-1"].Environment["API_INSTANCE"] == cf.Services["api-2"].Environment["API_INSTANCE"] {
		t.Error("api-1 and api-2 share an API_INSTANCE")
	}
	if cf.Services["worker-1"].Environment["WORKER_INSTANCE"] == cf.Services["worker-2"].Environment["WORKER_INSTANCE"] {
		t.Error("worker-1 and worker-2 share a WORKER_INSTANCE")
	}
	cmd := strings.Join(cf.Services["redis"].Command, " ")
	for _, want := range []struct{ arg, why string }{
		{"--appendonly yes", "AOF must be on"},
		{"--hash-max-listpack-value 2048", "a boundary record's stored answer must fit in a listpack (docs/deploy.md, \"Redis memory\")"},
		{"--rdbcompression no", "AOF rewrites would spend ~2.4x the CPU compressing records that barely compress (docs/PERFORMANCE.md)"},
	} {
		if !strings.Contains(cmd, want.arg) {
			t.Errorf("redis command %q: no %s: %s", cmd, want.arg, want.why)
		}
	}
	if limit, err := dockerMemory(cf.Services["redis"].MemLimit); err != nil {
		t.Errorf("redis: %v", err)
	} else {
		checkRedisMemoryArgs(t, "redis command", cf.Services["redis"].Command, limit)
	}
}

// TestComposeEnvironment: every variable set for an oncepay container is one
// its service reads, the required ones are there, and the demo secrets look
// like demo values.
func TestComposeEnvironment(t *testing.T) {
	t.Parallel()
	cf, vars := loadCompose(t)
	for name, svc := range cf.Services {
		image := svc.Image[strings.LastIndex(svc.Image, "/")+1:]
		repo, _, _ := strings.Cut(image, ":")
		if _, ok := requiredEnv[repo]; !ok || !strings.Contains(svc.Image, "oncepay") {
			continue
		}
		known := serviceEnvNames(t, repo)
		for k := range svc.Environment {
			if !known[k] {
				t.Errorf("%s: sets %s, which services/%s never mentions", name, k, repo)
			}
		}
		if name == "migrate" {
			if !slices.Equal(svc.Command, []string{"migrate"}) || svc.Environment["DATABASE_URL"] == "" {
				t.Errorf("migrate: want `api migrate` with DATABASE_URL, got %v", svc.Command)
			}
			continue
		}
		for _, k := range requiredEnv[repo] {
			if svc.Environment[k] == "" {
				t.Errorf("%s: %s is required and not set", name, k)
			}
		}
	}
	for v, def := range vars {
		secret := strings.Contains(v, "PASSWORD") || strings.Contains(v, "_KEY")
		if secret && !strings.Contains(def, "demo") {
			t.Errorf("${%s:-%s}: a secret's default must be an obvious demo value (contain \"demo\")", v, def)
		}
		if !strings.HasPrefix(v, "ONCEPAY_") {
			t.Errorf("${%s}: compose variables are ONCEPAY_* so that a stray shell variable cannot change the stack", v)
		}
	}
	// the example env file names exactly the variables the compose file reads
	example, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "compose", ".env.example"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(string(example), "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "# ")
		if k, _, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "ONCEPAY_") {
			listed[k] = true
		}
	}
	for v := range vars {
		if !listed[v] {
			t.Errorf("deploy/compose/.env.example does not list %s", v)
		}
	}
	for v := range listed {
		if _, ok := vars[v]; !ok {
			t.Errorf("deploy/compose/.env.example lists %s, which docker-compose.yml does not read", v)
		}
	}
}
