package deploy_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// TestChartTracing: tracing is off by default (no Jaeger, no
// OTEL_EXPORTER_OTLP_ENDPOINT); tracing.jaeger.enabled runs Jaeger and
// points api, worker and psp at its OTLP port, with the network policies
// letting exactly that through; tracing.otlpEndpoint points them at a
// collector of one's own instead.
// jaegerName is the name of the chart's Jaeger Deployment, Service and
// NetworkPolicy for the test release.
const jaegerName = release + "-jaeger"

func TestChartTracing(t *testing.T) {
	t.Parallel()
	jaeger := "http://" + jaegerName + ":4318"
	for _, tt := range []struct {
		vs         valueSet
		endpoint   string // want on api, worker, psp; "" = unset
		wantJaeger bool
	}{
		{vs: valueSets[0]},
		{vs: valueSet{name: "jaeger", set: []string{"tracing.jaeger.enabled=true"}}, endpoint: jaeger, wantJaeger: true},
		{vs: valueSet{name: "otlp-endpoint", set: []string{"tracing.otlpEndpoint=http://collector.observability:4318"}},
			endpoint: "http://collector.observability:4318"},
		{vs: valueSet{name: "both", set: []string{"tracing.jaeger.enabled=true", "tracing.otlpEndpoint=http://c:4318"}},
			endpoint: "http://c:4318", wantJaeger: true},
	} {
		t.Run(tt.vs.name, func(t *testing.T) {
			t.Parallel()
			r := render(t, tt.vs)
			found := map[string]bool{}
			for _, o := range r.byKind("Deployment") {
				d := o.obj.(*appsv1.Deployment)
				component := d.Spec.Template.Labels["app.kubernetes.io/component"]
				if component == "jaeger" {
					found["jaeger"] = true
					checkJaegerPod(t, d)
					continue
				}
				var got string
				for _, e := range d.Spec.Template.Spec.Containers[0].Env {
					if e.Name == "OTEL_EXPORTER_OTLP_ENDPOINT" {
						got = e.Value
					}
				}
				if got != tt.endpoint {
					t.Errorf("%s: OTEL_EXPORTER_OTLP_ENDPOINT = %q, want %q", d.Name, got, tt.endpoint)
				}
				found[component] = true
			}
			for _, c := range []string{"api", "worker", "psp"} {
				if !found[c] {
					t.Errorf("no %s Deployment", c)
				}
			}
			if found["jaeger"] != tt.wantJaeger {
				t.Errorf("Jaeger Deployment rendered: %v, want %v", found["jaeger"], tt.wantJaeger)
			}
			var svc *corev1.Service
			var np *networkingv1.NetworkPolicy
			for _, o := range r.objects {
				if o.meta.Name != jaegerName {
					continue
				}
				switch v := o.obj.(type) {
				case *corev1.Service:
					svc = v
				case *networkingv1.NetworkPolicy:
					np = v
				}
			}
			if !tt.wantJaeger {
				if svc != nil || np != nil {
					t.Error("a Jaeger Service or NetworkPolicy without tracing.jaeger.enabled")
				}
				return
			}
			if svc == nil || np == nil {
				t.Fatalf("Jaeger Service %v, NetworkPolicy %v: want both", svc != nil, np != nil)
			}
			ports := map[int32]bool{}
			for _, p := range svc.Spec.Ports {
				ports[p.Port] = true
			}
			if !ports[4318] || !ports[16686] {
				t.Errorf("Jaeger Service ports %v, want 4318 (OTLP/HTTP) and 16686 (UI)", svc.Spec.Ports)
			}
			if len(np.Spec.Ingress) == 0 || len(np.Spec.Ingress[0].From) != 3 {
				t.Errorf("Jaeger NetworkPolicy ingress %+v: want OTLP from api, worker and psp", np.Spec.Ingress)
			}
		})
	}
}

// checkJaegerPod: the chart's Jaeger runs a pinned image, as a non-root
// user on a read-only root with a writable /tmp, and drops every
// capability, like every other pod of the chart.
func checkJaegerPod(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	spec := d.Spec.Template.Spec
	if sc := spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("%s: pod does not run as non-root", d.Name)
	}
	c := spec.Containers[0]
	if _, tag, ok := strings.Cut(c.Image, ":"); !ok || tag == "" || tag == "latest" {
		t.Errorf("%s: image %q needs a pinned tag", d.Name, c.Image)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("%s: container security context %+v, want a read-only root and every capability dropped", d.Name, sc)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/tmp" }) {
		t.Errorf("%s: no writable /tmp", d.Name)
	}
}
