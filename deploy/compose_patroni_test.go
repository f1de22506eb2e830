package deploy_test

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var composePostgresNodes = []string{"postgres", "postgres-2", "postgres-3"}

// TestComposeHAPatroni checks Postgres under Patroni in docker-compose.ha.yml:
// etcd and three nodes of the project's Patroni image, hardened like the
// other nodes and healthy only with a running leader; every service that
// reaches Postgres (the api, the worker, migrate, the psp) dials the three
// nodes with target_session_attrs=read-write and waits for all three.
func TestComposeHAPatroni(t *testing.T) {
	t.Parallel()
	cf, vars := loadComposeFile(t, "docker-compose.ha.yml")
	hardened := func(name string, svc composeService) {
		t.Helper()
		if !svc.ReadOnly || svc.User == "" || strings.HasPrefix(svc.User, "0") || !slices.Equal(svc.CapDrop, []string{"ALL"}) ||
			!slices.Contains(svc.SecurityOpt, "no-new-privileges:true") || svc.MemLimit == "" || svc.Healthcheck == nil {
			t.Errorf("%s: want read_only, a non-root user, cap_drop ALL, no-new-privileges, mem_limit and a healthcheck: %+v", name, svc)
		}
		for _, p := range svc.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s: port %q is not published on 127.0.0.1 only", name, p)
			}
		}
	}

	etcd, ok := cf.Services["etcd"]
	if !ok {
		t.Fatal("no etcd service")
	}
	hardened("etcd", etcd)
	if etcd.Image != "oncepay/etcd:dev" || len(etcd.Volumes) == 0 {
		t.Errorf("etcd: image %q, volumes %v: want the project's oncepay/etcd and a data volume", etcd.Image, etcd.Volumes)
	}

	for _, name := range composePostgresNodes {
		svc, ok := cf.Services[name]
		if !ok {
			t.Errorf("no service %s", name)
			continue
		}
		hardened(name, svc)
		if svc.Image != "oncepay/patroni:dev" || svc.Hostname != name || svc.User != "999:999" {
			t.Errorf("%s: image %q, hostname %q, user %q: want oncepay/patroni:dev, %s, 999:999", name, svc.Image, svc.Hostname, svc.User, name)
		}
		if got := strings.Join(svc.Healthcheck.Test, " "); got != "CMD oncepay-patroni health" {
			t.Errorf("%s: healthcheck %q, want Patroni's (a running leader)", name, got)
		}
		// cut off, a node's look-ups of etcd must fail within Patroni's
		// retry_timeout, or a cut-off leader demotes itself too late
		if !slices.Contains(svc.DNSOpt, "timeout:1") || !slices.Contains(svc.DNSOpt, "attempts:1") {
			t.Errorf("%s: dns_opt %v, want timeout:1 and attempts:1", name, svc.DNSOpt)
		}
		if svc.DependsOn["etcd"].Condition != "service_healthy" {
			t.Errorf("%s: does not wait for etcd to be healthy", name)
		}
		env := svc.Environment
		if env["PATRONI_ETCD3_HOSTS"] != "etcd:2379" {
			t.Errorf("%s: PATRONI_ETCD3_HOSTS %q, want etcd:2379", name, env["PATRONI_ETCD3_HOSTS"])
		}
		for _, k := range []string{"PATRONI_SUPERUSER_PASSWORD", "PATRONI_REPLICATION_PASSWORD", "POSTGRES_PASSWORD", "PSP_DB_PASSWORD"} {
			if env[k] == "" {
				t.Errorf("%s: %s not set", name, k)
			}
		}
		if name != "postgres" && (len(svc.Volumes) == 0 || len(svc.Tmpfs) == 0) {
			t.Errorf("%s: want a data volume and the tmpfs of the base file's postgres", name)
		}
	}
	for v, def := range vars {
		if strings.Contains(v, "PASSWORD") && !strings.Contains(def, "demo") {
			t.Errorf("${%s:-%s}: a secret's default must be an obvious demo value", v, def)
		}
	}

	envOf := map[string]string{"api-1": "DATABASE_URL", "api-2": "DATABASE_URL", "worker-1": "DATABASE_URL",
		"worker-2": "DATABASE_URL", "migrate": "DATABASE_URL", "psp": "PSP_DATABASE_URL"}
	for name, k := range envOf {
		svc := cf.Services[name]
		u, err := url.Parse(svc.Environment[k])
		if err != nil {
			t.Errorf("%s: %s: %v", name, k, err)
			continue
		}
		if want := "postgres:5432,postgres-2:5432,postgres-3:5432"; u.Host != want {
			t.Errorf("%s: %s hosts %q, want %q", name, k, u.Host, want)
		}
		if got := u.Query().Get("target_session_attrs"); got != "read-write" {
			t.Errorf("%s: %s target_session_attrs %q, want read-write (the primary only)", name, k, got)
		}
		for _, n := range composePostgresNodes {
			if svc.DependsOn[n].Condition != "service_healthy" {
				t.Errorf("%s: does not wait for %s to be healthy", name, n)
			}
		}
	}
}

// TestPatroniConfig checks the Patroni image's configuration: synchronous
// replication (only the synchronous standby may be promoted), pg_rewind for
// a returning old leader, timing in which a leader that cannot renew its
// key demotes itself before the key expires, and a data directory apart
// from the single node's.
func TestPatroniConfig(t *testing.T) {
	t.Parallel()
	trackInputs(t, "deploy/patroni")
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "patroni", "patroni.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Bootstrap struct {
			DCS struct {
				TTL           int  `json:"ttl"`
				LoopWait      int  `json:"loop_wait"`
				RetryTimeout  int  `json:"retry_timeout"`
				Synchronous   bool `json:"synchronous_mode"`
				MaxLag        int  `json:"maximum_lag_on_failover"`
				PostgreSQLDCS struct {
					UsePgRewind bool `json:"use_pg_rewind"`
				} `json:"postgresql"`
			} `json:"dcs"`
			PostBootstrap string `json:"post_bootstrap"`
		} `json:"bootstrap"`
		PostgreSQL struct {
			DataDir string   `json:"data_dir"`
			PgHBA   []string `json:"pg_hba"`
		} `json:"postgresql"`
	}
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	dcs := c.Bootstrap.DCS
	if !dcs.Synchronous || !dcs.PostgreSQLDCS.UsePgRewind {
		t.Errorf("synchronous_mode %v, use_pg_rewind %v: want both", dcs.Synchronous, dcs.PostgreSQLDCS.UsePgRewind)
	}
	if dcs.TTL == 0 || dcs.LoopWait+2*dcs.RetryTimeout > dcs.TTL {
		t.Errorf("ttl %d, loop_wait %d, retry_timeout %d: want loop_wait + 2 * retry_timeout <= ttl", dcs.TTL, dcs.LoopWait, dcs.RetryTimeout)
	}
	if c.PostgreSQL.DataDir == "" || c.PostgreSQL.DataDir == "/var/lib/postgresql/data/pgdata" {
		t.Errorf("data_dir %q: want a directory apart from the single node's PGDATA", c.PostgreSQL.DataDir)
	}
	for _, line := range c.PostgreSQL.PgHBA {
		if strings.HasPrefix(line, "host") && strings.HasSuffix(line, "trust") {
			t.Errorf("pg_hba %q: network connections must authenticate", line)
		}
	}
	if _, err := os.Stat(filepath.Join(repoRoot(t), "deploy", "patroni", filepath.Base(c.Bootstrap.PostBootstrap))); err != nil {
		t.Errorf("post_bootstrap %q: %v", c.Bootstrap.PostBootstrap, err)
	}
}

// TestStateImages checks the Dockerfiles of the HA topology's state
// images: built from the official base images (the postgres image, Debian)
// with Debian's packages, run as a non-root user, and built by
// deploy/build-images.
func TestStateImages(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	trackInputs(t, "deploy/build-images")
	script, err := os.ReadFile(filepath.Join(root, "deploy", "build-images"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, from, packages string }{
		{"patroni", "postgres:16", "patroni"},
		{"etcd", "debian:bookworm-slim", "etcd-server"},
	} {
		raw, err := os.ReadFile(filepath.Join(root, "deploy", tc.dir, "Dockerfile"))
		if err != nil {
			t.Fatal(err)
		}
		df := string(raw)
		if !regexp.MustCompile(`(?m)^ARG \w+=` + regexp.QuoteMeta(tc.from) + `$`).MatchString(df) {
			t.Errorf("deploy/%s/Dockerfile: not built FROM %s by default", tc.dir, tc.from)
		}
		if !regexp.MustCompile(`apt-get install -y --no-install-recommends [^\n]*\b` + tc.packages + `\b`).MatchString(df) {
			t.Errorf("deploy/%s/Dockerfile: does not install Debian's %s", tc.dir, tc.packages)
		}
		users := regexp.MustCompile(`(?m)^USER (\S+)`).FindAllStringSubmatch(df, -1)
		if len(users) == 0 || strings.HasPrefix(users[len(users)-1][1], "0") || users[len(users)-1][1] == "root" {
			t.Errorf("deploy/%s/Dockerfile: runs as root (last USER %v)", tc.dir, users)
		}
		if !strings.Contains(string(script), tc.dir+" |") && !strings.Contains(string(script), "| "+tc.dir+")") {
			t.Errorf("deploy/build-images does not build %s", tc.dir)
		}
	}
}
