package trace

import (
	"fmt"
	"strconv"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Sampling variables Setup reads (the specification's names; only the
// samplers below are supported).
const (
	EnvSampler    = "OTEL_TRACES_SAMPLER"
	EnvSamplerArg = "OTEL_TRACES_SAMPLER_ARG"
)

// sampler returns the sampler OTEL_TRACES_SAMPLER names, wrapped so that a
// client span without a parent is dropped: the Redis pings of readiness
// checks, the relay's and reconciler's polling queries, which would each
// be a one-span trace of no payment. Supported: "" and parentbased_always_on
// (the default: every trace), parentbased_traceidratio and traceidratio
// with OTEL_TRACES_SAMPLER_ARG in [0, 1] (default 1), and always_off.
func sampler(getenv func(string) string) (sdktrace.Sampler, error) {
	var base sdktrace.Sampler
	switch name := strings.TrimSpace(getenv(EnvSampler)); name {
	case "", "parentbased_always_on", "always_on":
		base = sdktrace.ParentBased(sdktrace.AlwaysSample())
	case "always_off", "parentbased_always_off":
		base = sdktrace.NeverSample()
	case "traceidratio", "parentbased_traceidratio":
		ratio := 1.0
		if arg := strings.TrimSpace(getenv(EnvSamplerArg)); arg != "" {
			r, err := strconv.ParseFloat(arg, 64)
			if err != nil || r < 0 || r > 1 {
				return nil, fmt.Errorf("%s %q: want a ratio from 0 to 1", EnvSamplerArg, arg)
			}
			ratio = r
		}
		base = sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))
	default:
		return nil, fmt.Errorf("%s %q: not supported (parentbased_always_on, parentbased_traceidratio, traceidratio, always_off)", EnvSampler, name)
	}
	return noOrphanClients{base}, nil
}

// noOrphanClients drops client spans that start a trace and asks next
// about every other span.
type noOrphanClients struct{ next sdktrace.Sampler }

func (s noOrphanClients) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	parent := trace.SpanContextFromContext(p.ParentContext)
	if !parent.IsValid() && p.Kind == trace.SpanKindClient {
		return sdktrace.SamplingResult{Decision: sdktrace.Drop, Tracestate: parent.TraceState()}
	}
	return s.next.ShouldSample(p)
}

func (s noOrphanClients) Description() string {
	return "NoOrphanClients{" + s.next.Description() + "}"
}
