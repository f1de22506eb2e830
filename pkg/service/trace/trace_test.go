package trace

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestOn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"endpoint", map[string]string{EnvEndpoint: "http://127.0.0.1:4318"}, true},
		{"traces endpoint", map[string]string{EnvTracesEndpoint: "http://127.0.0.1:4318/v1/traces"}, true},
		{"disabled wins", map[string]string{EnvEndpoint: "http://127.0.0.1:4318", EnvSDKDisabled: "TRUE"}, false},
		{"service name alone", map[string]string{EnvServiceName: "api"}, false},
	} {
		if got := On(env(tc.env)); got != tc.want {
			t.Errorf("%s: On = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Off, Setup installs nothing and every hook hands back what it got.
func TestOffIsIdentity(t *testing.T) {
	t.Parallel()
	tr, err := Setup(context.Background(), "api", "", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Enabled() {
		t.Fatal("Enabled() = true with no endpoint set")
	}
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	if _, wrapped := tr.Handler(h, "api").(http.HandlerFunc); !wrapped {
		t.Error("Handler wrapped h although tracing is off")
	}
	if got := tr.Transport(http.DefaultTransport); got != http.DefaultTransport {
		t.Error("Transport wrapped the transport although tracing is off")
	}
	ctx := context.Background()
	if got := WithKey(ctx, "m", "k"); got != ctx {
		t.Error("WithKey derived a context although no span records")
	}
	if err := tr.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// Every span started under WithKey carries the merchant and the key.
func TestWithKeyStampsChildSpans(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(keyProcessor{}), sdktrace.WithSpanProcessor(rec))
	tracer := tp.Tracer("test")
	ctx, root := tracer.Start(context.Background(), "request")
	ctx = WithKey(ctx, "m_1", "key-1")
	_, child := tracer.Start(ctx, "redis")
	child.End()
	root.End()

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans ended, want 2", len(spans))
	}
	for _, s := range spans {
		got := map[attribute.Key]string{}
		for _, kv := range s.Attributes() {
			got[kv.Key] = kv.Value.AsString()
		}
		if got[AttrMerchant] != "m_1" || got[AttrIdempotencyKey] != "key-1" {
			t.Errorf("span %s attributes %v, want merchant m_1 and key key-1", s.Name(), got)
		}
	}
}

// Client spans that would start a trace (a readiness ping, a polling
// query) are dropped; spans under a request, and requests, are kept.
func TestSamplerDropsOrphanClientSpans(t *testing.T) {
	t.Parallel()
	smp, err := sampler(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(smp), sdktrace.WithSpanProcessor(rec))
	tracer := tp.Tracer("test")
	_, ping := tracer.Start(context.Background(), "ping", trace.WithSpanKind(trace.SpanKindClient))
	ping.End()
	ctx, req := tracer.Start(context.Background(), "POST /v1/payments", trace.WithSpanKind(trace.SpanKindServer))
	_, q := tracer.Start(ctx, "INSERT", trace.WithSpanKind(trace.SpanKindClient))
	q.End()
	req.End()
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
	}
	if want := []string{"INSERT", "POST /v1/payments"}; !slices.Equal(names, want) {
		t.Errorf("recorded %v, want %v", names, want)
	}
	for _, bad := range []map[string]string{
		{EnvSampler: "jaeger_remote"},
		{EnvSampler: "traceidratio", EnvSamplerArg: "2"},
	} {
		if _, err := sampler(env(bad)); err == nil {
			t.Errorf("sampler(%v): no error", bad)
		}
	}
}
