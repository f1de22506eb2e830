{{/* Helpers of networkpolicy.yaml */}}

{{- define "oncepay.peer" -}}
- podSelector:
    matchLabels:
      {{- include "oncepay.selectorLabels" . | nindent 6 }}
{{- end }}
{{- define "oncepay.exposedFrom" -}}
{{- /* from: for a port that is exposed outside the cluster; empty list = anyone */ -}}
{{- if .ctx.Values.networkPolicy.exposedFrom }}
from:
  {{- toYaml .ctx.Values.networkPolicy.exposedFrom | nindent 2 }}
{{- end }}
{{- end }}
{{- define "oncepay.exposed" -}}
{{- ne .type "ClusterIP" -}}
{{- end }}

{{- define "oncepay.otlpEgress" -}}
{{- /* egress to where traces go (oncepay.otlpEndpoint): the chart's Jaeger, or
any destination on the endpoint's port for a collector of your own */ -}}
{{- if .Values.tracing.otlpEndpoint }}
{{- $u := urlParse .Values.tracing.otlpEndpoint }}
{{- $port := (splitList ":" $u.host | rest | first) | default (ternary "443" "80" (eq $u.scheme "https")) }}
# traces: the OTLP collector of tracing.otlpEndpoint
- ports: [{protocol: TCP, port: {{ $port }}}]
{{- else if .Values.tracing.jaeger.enabled }}
# traces: the chart's Jaeger
- to: {{- include "oncepay.peer" (dict "ctx" . "component" "jaeger") | nindent 4 }}
  ports: [{protocol: TCP, port: 4318}]
{{- end }}
{{- end }}
