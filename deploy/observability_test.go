package deploy_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Grafana cannot run here (no image, no Debian package); these tests check
// everything about its configuration that can be checked without it.

type dashboard struct {
	UID    string  `json:"uid"`
	Title  string  `json:"title"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ X, Y, W, H int } `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

func readYAML(t *testing.T, rel string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}

func TestGrafanaProvisioning(t *testing.T) {
	t.Parallel()
	var ds struct {
		APIVersion  int `json:"apiVersion"`
		Datasources []struct {
			Name      string         `json:"name"`
			UID       string         `json:"uid"`
			Type      string         `json:"type"`
			Access    string         `json:"access"`
			URL       string         `json:"url"`
			IsDefault bool           `json:"isDefault"`
			Editable  bool           `json:"editable"`
			JSONData  map[string]any `json:"jsonData"`
		} `json:"datasources"`
	}
	readYAML(t, "deploy/observability/grafana/provisioning/datasources/prometheus.yml", &ds)
	if len(ds.Datasources) != 1 || ds.Datasources[0].UID != "oncepay-prometheus" || ds.Datasources[0].URL != "http://prometheus:9090" {
		t.Errorf("datasource: %+v, want uid oncepay-prometheus at http://prometheus:9090 (the compose service)", ds.Datasources)
	}
	var prov struct {
		APIVersion int `json:"apiVersion"`
		Providers  []struct {
			Name                  string            `json:"name"`
			Folder                string            `json:"folder"`
			Type                  string            `json:"type"`
			DisableDeletion       bool              `json:"disableDeletion"`
			AllowUIUpdates        bool              `json:"allowUiUpdates"`
			UpdateIntervalSeconds int               `json:"updateIntervalSeconds"`
			Options               map[string]string `json:"options"`
		} `json:"providers"`
	}
	readYAML(t, "deploy/observability/grafana/provisioning/dashboards/oncepay.yml", &prov)
	if len(prov.Providers) != 1 || prov.Providers[0].Options["path"] != "/var/lib/grafana/dashboards" {
		t.Fatalf("dashboard provider: %+v, want one reading /var/lib/grafana/dashboards", prov.Providers)
	}
	// and docker-compose.yml mounts the dashboards exactly there
	cf, _ := loadCompose(t)
	if !slices.Contains(cf.Services["grafana"].Volumes, "./deploy/observability/grafana/dashboards:/var/lib/grafana/dashboards:ro") {
		t.Errorf("grafana volumes %v do not mount the dashboards at the provider's path", cf.Services["grafana"].Volumes)
	}
}

// TestPrometheusConfig: every scrape target is a compose service and a port
// it listens on.
func TestPrometheusConfig(t *testing.T) {
	t.Parallel()
	var cfg struct {
		Global        map[string]string `json:"global"`
		RuleFiles     []string          `json:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `json:"job_name"`
			StaticConfigs []struct {
				Targets []string `json:"targets"`
			} `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	readYAML(t, "deploy/observability/prometheus/prometheus.yml", &cfg)
	cf, _ := loadCompose(t)
	// the ops listeners (API_OPS_ADDR, WORKER_LISTEN_ADDR, PSP_OPS_ADDR), never a payments port
	ports := map[string]string{"api": "8084", "worker": "8081", "psp": "8091", "rabbitmq": "15692"}
	jobs := map[string][]string{}
	for _, sc := range cfg.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				host, port, _ := strings.Cut(target, ":")
				if _, ok := cf.Services[host]; !ok {
					t.Errorf("job %s: target %s is not a compose service", sc.JobName, target)
				}
				if port != ports[sc.JobName] {
					t.Errorf("job %s: target %s, want port %s", sc.JobName, target, ports[sc.JobName])
				}
				jobs[sc.JobName] = append(jobs[sc.JobName], host)
			}
		}
	}
	if !slices.Equal(cfg.RuleFiles, []string{"alerts.yml"}) {
		t.Errorf("rule_files %v, want [alerts.yml]", cfg.RuleFiles)
	}
	// compose mounts the rules beside the configuration
	if prom := cf.Services["prometheus"]; !slices.Contains(prom.Volumes, "./deploy/observability/prometheus/alerts.yml:/etc/prometheus/alerts.yml:ro") {
		t.Errorf("compose's prometheus does not mount alerts.yml beside prometheus.yml: %v", prom.Volumes)
	}
	want := map[string][]string{"api": {"api-1", "api-2"}, "worker": {"worker-1", "worker-2"}, "psp": {"psp"}, "rabbitmq": {"rabbitmq"}}
	for job, hosts := range want {
		if !slices.Equal(jobs[job], hosts) {
			t.Errorf("job %s scrapes %v, want %v", job, jobs[job], hosts)
		}
	}
}

var (
	// label matchers, grouping clauses and strings carry no metric names
	promLabels   = regexp.MustCompile(`\{[^}]*\}|\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)|"[^"]*"`)
	promRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	promKeywords = map[string]bool{"by": true, "without": true, "and": true, "or": true, "unless": true, "bool": true, "offset": true}
	// series Prometheus itself produces for every target
	promBuiltin = map[string]bool{"up": true, "scrape_duration_seconds": true}
)

// summedShared matches a sum across replicas of a gauge that each api
// replica reports for the same shared thing (the outbox table, the one
// Redis): summing counts it once per replica.
var summedShared = regexp.MustCompile(`sum\s*\(\s*(outbox_backlog|redis_memory_\w+)\b`)

// promMetrics returns the metric names an expression queries (histogram
// suffixes stripped). Functions are identifiers followed by "(".
func promMetrics(expr string) []string {
	e := promRange.ReplaceAllString(promLabels.ReplaceAllString(expr, ""), "")
	var out []string
	for _, loc := range promIdent.FindAllStringIndex(e, -1) {
		name := e[loc[0]:loc[1]]
		rest := strings.TrimLeft(e[loc[1]:], " ")
		if strings.HasPrefix(rest, "(") || promKeywords[name] {
			continue
		}
		if loc[0] > 0 && (e[loc[0]-1] >= '0' && e[loc[0]-1] <= '9' || e[loc[0]-1] == '.') {
			continue // the "e" of 1e3, or a unit
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			name = strings.TrimSuffix(name, suffix)
		}
		out = append(out, name)
	}
	return out
}

func TestPromMetrics(t *testing.T) {
	t.Parallel()
	got := promMetrics(`histogram_quantile(0.99, sum by (le, route) (rate(http_request_duration_seconds_bucket{job="api"}[1m]))) / clamp_min(sum(increase(payments_created_total[5m])), 1)`)
	if want := []string{"http_request_duration_seconds", "payments_created_total"}; !slices.Equal(got, want) {
		t.Errorf("promMetrics = %v, want %v", got, want)
	}
}

// metricNames collects every "name" string literal registered as a metric
// Name, or as the name of a prometheus.NewDesc, in the services' and pkg/
// Go source.
func metricNames(t *testing.T) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`(?:Name:\s*|prometheus\.NewDesc\(\s*)"([a-z_:][a-z0-9_:]*)"`)
	names := map[string]bool{}
	for _, dir := range []string{"services", "pkg"} {
		err := filepath.WalkDir(filepath.Join(repoRoot(t), dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range re.FindAllSubmatch(b, -1) {
				names[string(m[1])] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(names) == 0 {
		t.Fatal("no metric names found in services/ and pkg/")
	}
	return names
}

// TestDashboard: the dashboard is valid JSON, laid out without overlaps, on
// the provisioned datasource, and queries only metrics the code registers.
func TestDashboard(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy/observability/grafana/dashboards/oncepay.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	var d dashboard
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("oncepay.json: %v", err)
	}
	if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard needs a uid, a title and panels: %+v", d)
	}
	known := metricNames(t)
	ids := map[int]bool{}
	covered := map[string]bool{}
	type cell struct{ x, y int }
	occupied := map[cell]string{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		for x := p.GridPos.X; x < p.GridPos.X+p.GridPos.W; x++ {
			for y := p.GridPos.Y; y < p.GridPos.Y+p.GridPos.H; y++ {
				if other, ok := occupied[cell{x, y}]; ok {
					t.Errorf("panel %q overlaps %q at (%d,%d)", p.Title, other, x, y)
				}
				occupied[cell{x, y}] = p.Title
			}
		}
		if p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q is wider than the 24-column grid", p.Title)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "oncepay-prometheus" {
			t.Errorf("panel %q: datasource %+v, want uid oncepay-prometheus", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.Count(tg.Expr, "(") != strings.Count(tg.Expr, ")") || strings.Count(tg.Expr, "{") != strings.Count(tg.Expr, "}") {
				t.Errorf("panel %q: unbalanced expression %q", p.Title, tg.Expr)
			}
			if summedShared.MatchString(tg.Expr) {
				t.Errorf("panel %q sums a gauge every replica reports for the same thing (use max): %q", p.Title, tg.Expr)
			}
			ms := promMetrics(tg.Expr)
			if len(ms) == 0 {
				t.Errorf("panel %q: no metric in %q", p.Title, tg.Expr)
			}
			for _, m := range ms {
				if !known[m] && !promBuiltin[m] {
					t.Errorf("panel %q queries %s, which no service registers (renamed?)", p.Title, m)
				}
				covered[m] = true
			}
		}
	}
	// the brief of the dashboard: these must be on it
	for _, m := range []string{
		"idem_boundary_outcomes_total", "worker_messages_total", "psp_calls_total", "psp_charges_total",
		"outbox_backlog", "http_request_duration_seconds", "worker_psp_call_duration_seconds",
	} {
		if !covered[m] {
			t.Errorf("the dashboard does not show %s", m)
		}
	}
}

// TestAlertRules: Prometheus accepts the configuration and its rules
// (promtool check config), every alert fires on the series it is meant for
// and stays quiet on the others (promtool test rules alerts_test.yml), and
// the rules query only metrics the code registers.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	promtool := promtoolBin(t)
	dir := filepath.Join(repoRoot(t), "deploy/observability/prometheus")
	if out, err := run(t, dir, promtool, "check", "config", "prometheus.yml"); err != nil {
		t.Errorf("promtool check config: %v\n%s", err, out)
	}
	if out, err := run(t, dir, promtool, "test", "rules", "alerts_test.yml"); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}

	var rules struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	readYAML(t, "deploy/observability/prometheus/alerts.yml", &rules)
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "alerts_test.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &tests); err != nil {
		t.Fatalf("alerts_test.yml: %v", err)
	}
	fires := map[string]bool{}
	for _, tt := range tests.Tests {
		for _, a := range tt.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			}
		}
	}
	known := metricNames(t)
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			for _, m := range promMetrics(r.Expr) {
				if !known[m] && !promBuiltin[m] {
					t.Errorf("alert %s queries %s, which no service registers (renamed?)", r.Alert, m)
				}
			}
			if summedShared.MatchString(r.Expr) {
				t.Errorf("alert %s sums a gauge every replica reports for the same thing (use max): %q", r.Alert, r.Expr)
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("alert %s: severity %q, want warning or critical", r.Alert, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s needs a summary and a description", r.Alert)
			}
			if !fires[r.Alert] {
				t.Errorf("alert %s: no test in alerts_test.yml shows it firing", r.Alert)
			}
		}
	}
	if n == 0 {
		t.Fatal("alerts.yml has no rules")
	}
}
