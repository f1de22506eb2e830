// Package trace sets up OpenTelemetry tracing for an oncepay service from
// the standard OTEL_* environment, and offers the few hooks the services
// need: an HTTP handler and transport, Redis and Postgres instrumentation,
// and the payment's merchant and idempotency key as attributes of every span.
//
// Tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set (and OTEL_SDK_DISABLED is not
// "true"). Off, Setup starts no exporter and no goroutine, installs
// nothing global, and every hook returns what it was given: the request
// path runs exactly as without this package.
//
// On, Setup installs the SDK tracer provider (OTLP over HTTP, batched) and
// the W3C trace-context and baggage propagators as the process's global
// OpenTelemetry provider and propagator, which otelhttp, redisotel, otelpgx
// and otel.Tracer use. The exporter reads the other standard variables
// itself (OTEL_EXPORTER_OTLP_HEADERS, OTEL_BSP_SCHEDULE_DELAY, ...);
// Setup reads OTEL_TRACES_SAMPLER (see sampler). A client span (Redis,
// Postgres, HTTP) that has no parent is never recorded.
package trace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Environment variables read by Setup (the exporter reads more of the
// standard OTEL_* ones).
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvServiceName    = "OTEL_SERVICE_NAME"
)

// Tracing is a service's tracing setup. The zero value, and the value Setup
// returns when tracing is off, is disabled: its hooks return their
// arguments unchanged and Shutdown does nothing.
type Tracing struct {
	tp *sdktrace.TracerProvider
}

// Enabled reports whether spans are recorded and exported.
func (t *Tracing) Enabled() bool { return t != nil && t.tp != nil }

// Setup reads the tracing configuration through getenv and, if tracing is
// on, installs the global tracer provider and propagator for service (the
// service.name resource attribute, unless OTEL_SERVICE_NAME overrides it)
// and instance (service.instance.id, omitted when ""). It fails only when
// the exporter cannot be built from the environment.
func Setup(ctx context.Context, service, instance string, getenv func(string) string) (*Tracing, error) {
	if !On(getenv) {
		return &Tracing{}, nil
	}
	if name := strings.TrimSpace(getenv(EnvServiceName)); name != "" {
		service = name
	}
	res := []attribute.KeyValue{attribute.String("service.name", service)}
	if instance != "" {
		res = append(res, attribute.String("service.instance.id", instance))
	}
	smp, err := sampler(getenv)
	if err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("otlp trace exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithSampler(smp),
		sdktrace.WithSpanProcessor(keyProcessor{}),
		sdktrace.WithResource(resource.NewSchemaless(res...)),
	)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return &Tracing{tp: tp}, nil
}

// On reports whether the environment turns tracing on: an OTLP endpoint is
// set and OTEL_SDK_DISABLED is not "true".
func On(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true") {
		return false
	}
	return getenv(EnvEndpoint) != "" || getenv(EnvTracesEndpoint) != ""
}

// ShutdownWithin is Shutdown for a main's defer: it waits at most d, even
// when ctx has already ended, and logs the spans it could not export.
func (t *Tracing) ShutdownWithin(ctx context.Context, d time.Duration, log *slog.Logger) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	if err := t.Shutdown(sctx); err != nil {
		log.Warn("tracing: spans not exported", "err", err)
	}
}

// Shutdown exports the spans still buffered and stops the exporter, within
// ctx. Spans started after it are dropped.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	if err := t.tp.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("tracing shutdown: %w", err)
	}
	return nil
}
