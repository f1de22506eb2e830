package trace

import "go.opentelemetry.io/otel/attribute"

// semconvRoute is the semantic-convention http.route attribute.
func semconvRoute(pattern string) attribute.KeyValue { return attribute.String("http.route", pattern) }
